import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_DEFAULTS } from '../admin/admin-options.js';
import { BOT_DEFAULTS, DEFAULTS, REDIS_DEFAULTS } from './defaults.js';

// The defaults live in code only (defaults.ts, ADMIN_DEFAULTS); every place that writes one down for a reader
// (the options' JSDoc, the README's tables, docs/) is checked against it here, so a changed default fails
// until its documentation says the same.

const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Words the docs use for a value instead of a literal. */
const WORDS: Record<string, unknown> = {
  none: undefined,
  unset: undefined,
  'unset (no cap)': undefined,
  'no cap': undefined,
  'from the request': undefined,
  "Standard Webhooks'": DEFAULTS.callbackRetryScheduleMs,
  'SQLite file `webhook-triggers.sqlite`': { type: 'better-sqlite3', database: 'webhook-triggers.sqlite' },
};

/**
 * A documented default as a value: a JavaScript literal (`64`, `'all'`, `{ limit: 10, ttlMs: 1000 }`, `[0, 5000]`,
 * `undefined`, `null`): the first one in backticks, else the text with any remark in parentheses after it left
 * out; or one of WORDS.
 */
function documentedValue(text: string): unknown {
  const written = text.trim();
  if (written in WORDS) return WORDS[written];
  const literal = /`([^`]+)`/.exec(written)?.[1] ?? written.replace(/\s*\(.*$/s, '').replace(/\s*\.$/, '');
  if (literal === 'undefined') return undefined;
  const json = literal.replace(/'([^']*)'/g, (_, s: string) => JSON.stringify(s)).replace(/([{,]\s*)([A-Za-z_$][\w$]*)\s*:/g, '$1"$2":');
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw new Error(`not a value this spec can read: ${JSON.stringify(text)} (write a literal, or add the words to WORDS)`);
  }
}

/** `@default` of each field of an interface, by field name (nested fields joined with dots). */
function jsDocDefaults(source: string, interfaceName: string): Map<string, string> {
  const start = source.indexOf(`export interface ${interfaceName} `);
  if (start < 0) throw new Error(`interface ${interfaceName} not found`);
  const body = source.slice(start, source.indexOf('\n}\n', start));
  const found = new Map<string, string>();
  const parents: string[] = [];
  const field = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)\??:\s*([^\n]*)|\n(\s*)\};/g;
  for (let m = field.exec(body); m; m = field.exec(body)) {
    if (m[4] !== undefined) {
      parents.pop();
      continue;
    }
    const [, doc, name, type] = m;
    const name_ = [...parents, name].join('.');
    const tag = /@default\s+([^\n]*?)\s*(?:\*\/|\n|$)/.exec(doc);
    if (tag) found.set(name_, tag[1].replace(/\s*\*\s*$/, ''));
    if (type.trim() === '{') parents.push(name);
  }
  return found;
}

/** The rows of the Markdown table whose header starts with `firstHeader`, after `heading` when given. */
function tableRows(markdown: string, firstHeader: RegExp, heading?: string): Array<[string, string]> {
  const from = heading ? markdown.indexOf(heading) : 0;
  if (from < 0) throw new Error(`heading ${heading} not found`);
  const lines = markdown.slice(from).split('\n');
  const top = lines.findIndex((line) => firstHeader.test(line));
  if (top < 0) throw new Error(`table ${String(firstHeader)} not found`);
  const rows: Array<[string, string]> = [];
  for (const line of lines.slice(top + 2)) {
    if (!line.startsWith('|')) break;
    const cells = splitOutside(line.slice(1, -1), '|').map((cell) => cell.trim());
    rows.push([cells[0], cells[1]]);
  }
  return rows;
}

/** `text` split at `separator` where it is outside backticks, brackets and braces (`\|` is no separator). */
function splitOutside(text: string, separator: string): string[] {
  const parts = [''];
  let depth = 0;
  let code = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && text[i + 1] === '|') {
      parts[parts.length - 1] += '|';
      i++;
      continue;
    }
    if (c === '`') code = !code;
    if (!code && '[{'.includes(c)) depth++;
    if (!code && ']}'.includes(c)) depth--;
    if (!code && depth === 0 && text.startsWith(separator, i)) {
      parts.push('');
      i += separator.length - 1;
      continue;
    }
    parts[parts.length - 1] += c;
  }
  return parts;
}

/** Each option named in a table's first column with its documented default (`a`, `b` | `1`, `2` is two rows). */
function documentedDefaults(rows: Array<[string, string]>): Map<string, string> {
  const found = new Map<string, string>();
  for (const [names, value] of rows) {
    const each = names.split(',').map((name) => name.trim().replace(/^`|`$/g, ''));
    const values = each.length > 1 ? splitOutside(value, ', ') : [value];
    if (values.length !== each.length) throw new Error(`row ${names}: ${each.length} options, ${values.length} defaults`);
    each.forEach((name, i) => found.set(name, values[i]));
  }
  return found;
}

/** The value in code for a (dotted) option name, or `missing` when code has no such default. */
function inCode(defaults: object, name: string): unknown {
  let value: unknown = defaults;
  for (const part of name.split('.')) {
    if (typeof value !== 'object' || value === null || !(part in value)) return missing;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
const missing = Symbol('no default in code');

/**
 * One row per option: [where, option, what the docs say, the value in code]. An option whose default is an object
 * may instead be documented field by field (`rateLimits.perTrigger`, `rateLimits.perAccount`).
 */
function compare(where: string, documented: Map<string, string>, defaults: object, names: string[]) {
  const expanded = names.flatMap((name) => {
    const value = inCode(defaults, name);
    const fields = typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.keys(value) : [];
    const byField = fields.map((field) => `${name}.${field}`);
    return !documented.has(name) && byField.length > 0 && byField.every((n) => documented.has(n)) ? byField : [name];
  });
  return expanded.map((name) => {
    const text = documented.get(name);
    return { where, name, documented: text === undefined ? 'not documented' : documentedValue(text), code: inCode(defaults, name) };
  });
}

/** Every row's documented value is the one in code. */
function expectSame(rows: ReturnType<typeof compare>) {
  expect(rows).toEqual(rows.map((row) => ({ ...row, documented: row.code })));
}

const OPTION_NAMES = Object.keys(DEFAULTS);

describe('every default is written once, in code, and the docs say the same', () => {
  const options = read('src/options/webhook-trigger-options.interface.ts');
  const readme = read('README.md');

  it.each([
    ['the options JSDoc', jsDocDefaults(options, 'WebhookTriggerModuleOptions')],
    ['the README options table', documentedDefaults(tableRows(readme, /^\| option \| default \|/))],
    ['docs/configuration.md', documentedDefaults(tableRows(read('docs/configuration.md'), /^\| option \| default \|/, '## Options'))],
  ])('%s: every option of DEFAULTS, with its value', (where, documented) => {
    expectSame(compare(where, documented, DEFAULTS, OPTION_NAMES));
    // And nothing documented that the code does not have (a renamed or removed option).
    expect([...documented.keys()].filter((name) => inCode(DEFAULTS, name) === missing)).toEqual([]);
  });

  it('docs/callbacks.md: the callback options', () => {
    const documented = documentedDefaults(tableRows(read('docs/callbacks.md'), /^\| option \| default \|/, '## Options'));
    const names = OPTION_NAMES.filter((name) => name.startsWith('callback'));
    expectSame(compare('docs/callbacks.md', documented, DEFAULTS, names));
    expect([...documented.keys()].filter((name) => !names.includes(name))).toEqual([]);
  });

  it('the redis option: JSDoc and docs/configuration.md', () => {
    expect(documentedValue(jsDocDefaults(options, 'WebhookTriggerRedisOptions').get('keyPrefix') ?? 'none')).toBe(REDIS_DEFAULTS.keyPrefix);
    const configuration = /`keyPrefix` \(default (`[^`]+`)\)/.exec(read('docs/configuration.md'))?.[1] ?? 'none';
    expect(documentedValue(configuration)).toBe(REDIS_DEFAULTS.keyPrefix);
    const inReadme = /\{ url, keyPrefix\? = ('[^']*') \}/.exec(readme)?.[1] ?? 'none';
    expect(documentedValue(inReadme)).toBe(REDIS_DEFAULTS.keyPrefix);
  });

  it("@WebhookBot()'s options: JSDoc and the README table", () => {
    const jsDoc = jsDocDefaults(read('src/bots/bot.types.ts'), 'WebhookBotOptions');
    const table = documentedDefaults(tableRows(readme, /^\| `@WebhookBot\(\)` option \| default \|/));
    for (const documented of [jsDoc, table]) {
      expectSame(compare('@WebhookBot()', documented, BOT_DEFAULTS, Object.keys(BOT_DEFAULTS)));
    }
  });

  it("the admin module's settings: JSDoc and docs/admin.md", () => {
    const jsDoc = jsDocDefaults(read('src/admin/admin-options.ts'), 'WebhookTriggerAdminSettings');
    const table = documentedDefaults(tableRows(read('docs/admin.md'), /^\| Option \| Default \|/, '## Options'));
    for (const documented of [jsDoc, table]) {
      expectSame(compare('admin', documented, ADMIN_DEFAULTS, Object.keys(ADMIN_DEFAULTS)));
    }
  });

  it('reads the ways the docs write a value', () => {
    expect(documentedValue('`300000` (5 min)')).toBe(300_000);
    expect(documentedValue('300000 (5 minutes, as the spec says)')).toBe(300_000);
    expect(documentedValue("{ type: 'better-sqlite3', database: 'x.sqlite' }")).toEqual({ type: 'better-sqlite3', database: 'x.sqlite' });
    expect(documentedValue('`[0, 5000]`')).toEqual([0, 5000]);
    expect(documentedValue('undefined (no cap)')).toBeUndefined();
    expect(() => documentedValue('sixty-four')).toThrow('not a value this spec can read');
  });
});
