// Install tests (`npm run test:install`): the library as users get it. Packs it (`npm pack`, whose prepack
// builds dist/), generates fresh NestJS host apps with the Nest CLI in a temp dir, installs the tarball with
// the README's own install lines, type-checks the package's declarations as strict hosts compile them (each
// entry, under each module resolution such an app may use), writes the README's snippets in as the app's code,
// compiles with the app's `npm run build`, starts `node dist/main.js`, creates and funds a trigger through
// WebhookTriggersAdmin, triggers it over HTTP, waits on sync and stops the process with SIGTERM.
//
// Not part of `npm test`: it installs from the registry and takes minutes. Options:
//   --only=<app>[,<app>]   run only these apps (names below)
//   --keep                 keep the temp dir (apps, logs, tarball) and print its path
//   --build-native-each    build better-sqlite3 from source in every app (by default, the first app builds
//                          it and later apps unpack that build as a local prebuild: ~70 s saved per app)
// Runs on the Node first on PATH (every npm, npx and app it starts too): CI runs it on Node 20 for every app, then
// on the newer lines with their binary first on PATH and `npm_config_nodedir` naming its headers (better-sqlite3
// is built from source against them).
// Environment: WEBHOOK_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test) names the server
// on which the PostgreSQL app gets a scratch database.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const CONFIGURATION_DOC = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
const TESTING_DOC = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).name;
const POSTGRES_URL = process.env.WEBHOOK_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * The hosts. `module` names the README snippet that becomes src/app.module.ts. `install` names a block of
 * docs/configuration.md to install with instead of the README's line; `minNode` ([major, minor]) keeps an app out of
 * a run on an older Node (without --only; with it, such a run fails): CI runs it on its newer Node line.
 */
const APPS = [
  {
    name: 'nest11-cjs-express',
    cli: '@nestjs/cli@11',
    nest: 11,
    moduleType: 'commonjs',
    adapter: 'express',
    module: 'app.module',
    db: 'sqlite',
    // docs/testing.md's spec: with the runner `nest new` set up, then with the other one as the doc says.
    kit: { scaffold: 'jest', other: 'vitest' },
  },
  {
    name: 'nest12-esm-fastify',
    cli: '@nestjs/cli@12',
    nest: 12,
    moduleType: 'module',
    adapter: 'fastify',
    module: 'app.module',
    db: 'sqlite',
    extras: ['@nestjs/platform-fastify'],
    env: { WEBHOOK_KEY_SECRET: 'install-test-key-secret-0123456789' },
    kit: { scaffold: 'vitest', other: 'jest' },
  },
  {
    name: 'nest12-postgres-datasource',
    cli: '@nestjs/cli@12',
    nest: 12,
    moduleType: 'module',
    adapter: 'express',
    module: 'app.module.datasource',
    db: 'postgres',
    extras: ['pg', '@nestjs/typeorm'],
  },
  {
    // SQLite on Node 24 and 26: better-sqlite3 13 with npm's override, as docs/configuration.md says.
    name: 'nest12-sqlite-better-sqlite3-13',
    cli: '@nestjs/cli@12',
    nest: 12,
    moduleType: 'module',
    adapter: 'express',
    module: 'app.module',
    db: 'sqlite',
    install: 'install:better-sqlite3-13',
    sqliteMajor: 13,
    minNode: [22, 14],
    kit: { scaffold: 'vitest', other: 'jest' },
  },
];

const args = process.argv.slice(2);
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const keep = args.includes('--keep');
const buildNativeEach = args.includes('--build-native-each');
function usage(msg) {
  console.error(
    `${msg}\nusage: npm run test:install -- [--only=<app>[,<app>]] [--keep] [--build-native-each]\napps: ${APPS.map((a) => a.name).join(', ')}`,
  );
  process.exit(2);
}
for (const a of args) if (!['--keep', '--build-native-each'].includes(a) && !a.startsWith('--only=')) usage(`unknown argument ${a}`);
if (only) for (const n of only) if (!APPS.some((a) => a.name === n)) usage(`unknown app ${n}`);

/** Whether this Node is `[major, minor]` or later. */
function nodeAtLeast([major, minor]) {
  const [m, n] = process.versions.node.split('.').map(Number);
  return m > major || (m === major && n >= minor);
}

const started = Date.now();
const secs = (ms) => (ms / 1000).toFixed(1);
const log = (msg) => console.log(`[${secs(Date.now() - started).padStart(6)}s] ${msg}`);
function fail(msg) {
  throw Object.assign(new Error(msg), { installTest: true });
}

// --- README: install lines and snippets, found by the HTML comment that marks them ------------------------

/** The fenced code block right after `<!-- marker -->` in `text`, if any. */
function markedBlock(text, marker) {
  const pattern = new RegExp(`<!-- ${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\``);
  return text.match(pattern)?.[1];
}

/** The fenced code block right after `<!-- marker -->`, in the README or, for the longer examples, docs/configuration.md. */
function readmeBlock(marker) {
  const block = markedBlock(README, marker) ?? markedBlock(CONFIGURATION_DOC, marker);
  if (block === undefined) fail(`neither README.md nor docs/configuration.md has a fenced code block marked <!-- ${marker} -->`);
  return block;
}

/** The fenced code block marked `<!-- marker -->` in docs/testing.md. */
function testingBlock(marker) {
  const block = markedBlock(TESTING_DOC, marker);
  if (block === undefined) fail(`docs/testing.md has no fenced code block marked <!-- ${marker} -->`);
  return block;
}

/** The README's one install line (the same on every NestJS major), with the package name replaced by the tarball's path. */
function installLine(tarball) {
  const lines = readmeBlock('install:any')
    .split('\n')
    .filter((l) => l.trim() !== '');
  if (lines.length !== 1 || !lines[0].startsWith('npm install ')) fail('<!-- install:any --> is not one npm install line');
  const words = lines[0].trim().split(/\s+/);
  if (!words.includes(PACKAGE)) fail(`<!-- install:any --> does not install ${PACKAGE}`);
  return words.map((w) => (w === PACKAGE ? tarball : w));
}

/** The app's install commands, the package's name replaced by the tarball's path: a docs block's, or the README's line. */
function installLines(app, tarball) {
  if (!app.install) return [installLine(tarball)];
  const lines = readmeBlock(app.install)
    .split('\n')
    .filter((l) => l.trim() !== '');
  if (!lines.every((l) => l.startsWith('npm '))) fail(`<!-- ${app.install} --> has a line that is not an npm command`);
  // Words as the shell gives them: a word in single quotes loses its quotes (no other quoting is used there).
  const words = (line) =>
    line
      .trim()
      .split(/\s+/)
      .map((w) => w.replace(/^'(.*)'$/, '$1'));
  if (!lines.some((l) => words(l).includes(PACKAGE))) fail(`<!-- ${app.install} --> does not install ${PACKAGE}`);
  return lines.map((l) => words(l).map((w) => (w === PACKAGE ? tarball : w)));
}

/** From the table after `<!-- install:extras -->`, the `npm install …` command that installs `pkg`. */
function extrasLine(pkg) {
  const table = README.split('<!-- install:extras -->\n')[1]?.split('\n\n')[0];
  if (!table) fail('README.md has no table marked <!-- install:extras -->');
  for (const [, cmd] of table.matchAll(/`(npm install [^`]+)`/g)) {
    const words = cmd.trim().split(/\s+/);
    if (words.some((w) => w === pkg || w.startsWith(`${pkg}@`))) return words;
  }
  fail(`the <!-- install:extras --> table has no npm install line for ${pkg}`);
}

/** The README's trigger and sync example: the body sent and the answers shown. */
function curlExample() {
  const block = readmeBlock('snippet:curl');
  const body = block.match(/ -d '([^']+)'/)?.[1];
  const answers = [...block.matchAll(/^# (\{.*\})$/gm)].map((m) => JSON.parse(m[1]));
  if (!body || answers.length !== 2) fail('<!-- snippet:curl --> should have one -d body and two "# {json}" answers (trigger, sync)');
  return { body, triggerAnswer: answers[0], syncAnswer: answers[1] };
}

// --- processes ---------------------------------------------------------------------------------------------

const children = new Set();

/** Runs a command to completion, its output into `logFile`; fails with the output's tail. */
function run(cmd, argv, { cwd, env, logFile, timeoutMs }) {
  return new Promise((resolvePromise, reject) => {
    const from = existsSync(logFile) ? statSync(logFile).size : 0;
    const out = createWriteStream(logFile, { flags: 'a' });
    out.write(`$ ${[cmd, ...argv].join(' ')}   (in ${cwd})\n`);
    const child = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => reject(e));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      out.end(() => {
        if (code === 0) return resolvePromise(readFileSync(logFile, 'utf8'));
        const why = signal === 'SIGKILL' ? `did not finish within ${secs(timeoutMs)}s` : `exited with ${code ?? signal}`;
        reject(
          Object.assign(new Error(`${cmd} ${argv.join(' ')} ${why}`), {
            installTest: true,
            logFile,
            output: readFileSync(logFile).subarray(from).toString(),
          }),
        );
      });
    });
  });
}

function tail(text, lines = 60) {
  return text.split('\n').slice(-lines).join('\n');
}

function freePort() {
  return new Promise((resolvePromise, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePromise(port));
    });
  });
}

/**
 * A preload for the apps' production starts: it fails the process when anything resolves a file of the package's
 * testing kit (dist/testing/) or @nestjs/testing, so every start proves `import '<package>'` never loads the kit.
 */
const NO_TESTING_KIT = `const Module = require('node:module');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const file = resolveFilename.apply(this, args);
  if (/[\\\\/]${PACKAGE}[\\\\/]dist[\\\\/]testing[\\\\/]|[\\\\/]@nestjs[\\\\/]testing[\\\\/]/.test(file)) {
    throw new Error('production loaded the testing kit: ' + file);
  }
  return file;
};
`;
let noTestingKitPreload;

/** A started app: its output so far, a line-waiter and its exit. */
function startApp(dir, env) {
  const child = spawn(process.execPath, ['--require', noTestingKitPreload, 'dist/main.js'], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const app = { child, stdout: '', stderr: '', exit: null };
  const waiters = new Set();
  const check = () => {
    for (const w of waiters) w();
  };
  child.stdout.on('data', (d) => ((app.stdout += d), check()));
  child.stderr.on('data', (d) => ((app.stderr += d), check()));
  app.exited = new Promise((resolvePromise) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      app.exit = { code, signal };
      check();
      resolvePromise(app.exit);
    }),
  );
  /** The first stdout line matching `re`, or a failure on exit or after `ms`. */
  app.waitForLine = (re, ms) =>
    new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => (waiters.delete(w), reject(new Error(`no line matching ${re} within ${secs(ms)}s`))), ms);
      const w = () => {
        const m = app.stdout.match(re);
        if (m || app.exit) {
          clearTimeout(timer);
          waiters.delete(w);
          if (m) resolvePromise(m);
          else reject(new Error(`the app exited (${JSON.stringify(app.exit)}) before printing a line matching ${re}`));
        }
      };
      waiters.add(w);
      w();
    });
  app.output = () => `--- stdout ---\n${tail(app.stdout, 80)}\n--- stderr ---\n${tail(app.stderr, 80)}`;
  return app;
}

async function http(method, url, { key, body, headers: extra } = {}) {
  const headers = key === undefined ? { ...extra } : { 'X-Key': key, ...extra };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

// --- better-sqlite3: build once, unpack in later apps -------------------------------------------------------

/**
 * better-sqlite3's install script is `prebuild-install || node-gyp rebuild`. No prebuilt binary can be
 * downloaded here, so each app would compile SQLite (~70 s on 2 cores). After the first build, this packs the
 * binary the way its GitHub release does, into a folder that prebuild-install reads before downloading
 * (`npm_config_better_sqlite3_local_prebuilds`): later apps install it as users with a download do.
 * Returns how better-sqlite3 got into this app.
 */
async function shareNativeBuild(dir, ctx, logFile) {
  const pkgDir = join(dir, 'node_modules', 'better-sqlite3');
  if (!existsSync(join(pkgDir, 'package.json'))) return undefined;
  const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  if (!existsSync(join(pkgDir, 'build'))) return `better-sqlite3 ${version}: the binary shipped in the package (no build)`;
  const fromSource = existsSync(join(pkgDir, 'build', 'Release', 'obj'));
  const how = `better-sqlite3 ${version} ${fromSource ? 'built from source' : 'unpacked from the local prebuild'}`;
  if (buildNativeEach || !fromSource) return how;
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(ctx.prebuilds, { recursive: true });
  await run('tar', ['-czf', join(ctx.prebuilds, name), '-C', pkgDir, 'build/Release/better_sqlite3.node'], {
    cwd: dir,
    logFile,
    timeoutMs: 60_000,
  });
  ctx.npmEnv.npm_config_better_sqlite3_local_prebuilds = ctx.prebuilds;
  return `${how}; packed as a local prebuild for the next apps`;
}

// --- PostgreSQL scratch database (pg from the repo's own dev dependencies) -----------------------------------

async function withPg(fn) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The scratch database that exists now, dropped on SIGINT/SIGTERM too. */
let scratchDb;

async function createScratchDb() {
  const name = `webhook_install_${process.pid}_${Date.now()}`;
  await withPg((c) => c.query(`CREATE DATABASE ${name}`));
  scratchDb = name;
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

async function dropScratchDb(name) {
  await withPg((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  scratchDb = undefined;
}

// --- generated code ---------------------------------------------------------------------------------------

/**
 * main.ts: the README's main snippet inside a bootstrap function (on Fastify with the README's Fastify
 * `create` call), then test-only scaffolding, not from the README: with INSTALL_TEST_SETUP=1 it funds the
 * first bot's account and creates a trigger through WebhookTriggersAdmin, and prints them as one JSON line.
 */
function mainTs(app) {
  let snippet = readmeBlock('snippet:main');
  const imports = ["import { NestFactory } from '@nestjs/core';"];
  if (app.adapter === 'fastify') {
    const create = README.match(/on Fastify: `(NestFactory\.create\(AppModule, new FastifyAdapter\([^`]*\)\))`/)?.[1];
    if (!create)
      fail('README.md does not say how to create the app on Fastify ("on Fastify: `NestFactory.create(AppModule, new FastifyAdapter())`")');
    if (!snippet.includes('NestFactory.create(AppModule)')) fail('<!-- snippet:main --> has no NestFactory.create(AppModule)');
    snippet = snippet.replace('NestFactory.create(AppModule)', create);
    imports.push("import { FastifyAdapter } from '@nestjs/platform-fastify';");
  }
  imports.push(`import { WebhookTriggersAdmin } from '${PACKAGE}';`, "import { AppModule } from './app.module.js';");
  const indent = (s) => s.replace(/^(?=.)/gm, '  ');
  const firstTrigger = readmeBlock('snippet:first-trigger');
  return `${imports.join('\n')}

async function bootstrap(): Promise<void> {
  // --- README.md <!-- snippet:main --> ---
${indent(snippet)}
  // --- README.md <!-- snippet:first-trigger --> (in a block: the scaffolding below names \`admin\` too) ---
  {
${indent(indent(firstTrigger))}
  }
  // --- install-test scaffolding (not from the README) ---
  if (process.env.INSTALL_TEST_SETUP === '1') {
    const admin = app.get(WebhookTriggersAdmin);
    const bots = admin.listBots();
    const bot = bots[0];
    if (bots.length !== 1 || bot === undefined) throw new Error(\`expected one bot, found \${bots.length}\`);
    await admin.setCredits(bot.accountId, 10);
    const trigger = await admin.createTrigger(bot.id, { name: 'install test' });
    const credits = await admin.getCredits(bot.accountId);
    console.log(\`INSTALL_TEST_SETUP \${JSON.stringify({ bot, credits, trigger })}\`);
  }
}

bootstrap().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
`;
}

/**
 * The README's admin snippet merged into the module as the README tells a user to: its import lines on top,
 * its `WebhookTriggerAdminModule.forRoot(…)` line into the imports, after the line that closes
 * `WebhookTriggerModule.forRoot({ … })`. Returns the module and the file the guard's import names.
 */
function withAdminModule(moduleTs, name) {
  const snippet = readmeBlock('snippet:admin-module').split('\n');
  const imports = snippet.filter((l) => l.startsWith('import '));
  const forRoot = snippet.filter((l) => l.startsWith('WebhookTriggerAdminModule.forRoot('));
  if (forRoot.length !== 1) fail('<!-- snippet:admin-module --> has no one WebhookTriggerAdminModule.forRoot(…) line');
  const rest = snippet.filter((l) => !imports.includes(l) && !forRoot.includes(l) && l.trim() !== '' && !l.trim().startsWith('//'));
  if (rest.length) fail(`<!-- snippet:admin-module --> has lines that are neither imports nor the forRoot line: ${rest.join(' | ')}`);
  const guardFile = imports.join('\n').match(/import \{ AdminGuard \} from '\.\/([\w.-]+)\.js';/)?.[1];
  if (!guardFile) fail("<!-- snippet:admin-module --> does not import AdminGuard from a relative './<file>.js'");
  const lines = moduleTs.split('\n');
  const at = lines.findIndex((l) => /^ {4}\}\),\s*$/.test(l)); // `    }),` closing WebhookTriggerModule.forRoot
  if (at < 0) fail(`<!-- snippet:${name} --> has no "    })," line closing WebhookTriggerModule.forRoot({ … })`);
  lines.splice(at + 1, 0, `    ${forRoot[0].trim()}`);
  return { moduleTs: [...imports, ...lines].join('\n'), guardFile };
}

/** Writes the README's module and bot snippets (and main.ts) into the generated app. */
function writeAppCode(app, dir) {
  const moduleTs = readmeBlock(`snippet:${app.module}`);
  const botImport = moduleTs.match(/import \{ (\w+) \} from '\.\/([\w.-]+)\.js';/);
  if (!botImport) fail(`<!-- snippet:${app.module} --> imports no bot from a relative './<file>.js'`);
  const [, botClass, botFile] = botImport;
  const botTs = readmeBlock('snippet:bot');
  if (!botTs.includes(`export class ${botClass} `))
    fail(`<!-- snippet:bot --> does not export ${botClass}, which <!-- snippet:${app.module} --> imports`);
  const admin = withAdminModule(moduleTs, app.module);
  writeFileSync(join(dir, 'src/app.module.ts'), `${admin.moduleTs}\n`);
  writeFileSync(join(dir, `src/${botFile}.ts`), `${botTs}\n`);
  writeFileSync(join(dir, `src/${admin.guardFile}.ts`), `${readmeBlock('snippet:admin-guard')}\n`);
  writeFileSync(join(dir, 'src/main.ts'), mainTs(app));
  return [
    `src/app.module.ts (<!-- snippet:${app.module} --> + <!-- snippet:admin-module -->)`,
    `src/${botFile}.ts (<!-- snippet:bot -->)`,
    `src/${admin.guardFile}.ts (<!-- snippet:admin-guard -->)`,
    'src/main.ts (<!-- snippet:main --> + scaffolding)',
  ];
}

/** Fails unless the generated app is the kind of host this run is about. */
function checkGeneratedApp(app, dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const type = pkg.type === 'module' ? 'module' : 'commonjs';
  if (type !== app.moduleType) fail(`${app.cli} generated a ${type} app, expected ${app.moduleType}`);
  const nestRange = pkg.dependencies?.['@nestjs/core'] ?? '';
  if (!nestRange.includes(`${app.nest}.`)) fail(`${app.cli} generated @nestjs/core ${nestRange}, expected ${app.nest}.x`);
  const tsconfig = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')).compilerOptions;
  if (app.moduleType === 'module') {
    if (String(tsconfig.module).toLowerCase() !== 'nodenext') fail(`tsconfig module is ${tsconfig.module}, expected nodenext`);
    if (tsconfig.strict !== true) fail('tsconfig is not strict');
  }
  return `type ${type}, @nestjs/core ${nestRange}, tsconfig module ${tsconfig.module}${tsconfig.strict ? ', strict' : ''}`;
}

/** The version of `pkg` installed in the app, or 'missing'. */
function installedVersion(dir, pkg) {
  const f = join(dir, 'node_modules', pkg, 'package.json');
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')).version : 'missing';
}

/** Installed versions of what matters, and one copy of Nest. */
function checkInstalled(app, dir) {
  const version = (p) => installedVersion(dir, p);
  const core = version('@nestjs/core');
  if (core.split('.')[0] !== String(app.nest)) fail(`@nestjs/core ${core} installed, expected ${app.nest}.x`);
  const want = [
    ...new Set([
      '@nestjs/core',
      PACKAGE,
      'typeorm',
      app.db === 'postgres' ? 'pg' : 'better-sqlite3',
      `@nestjs/platform-${app.adapter}`,
      ...(app.extras ?? []).filter((p) => p.startsWith('@nestjs/')),
    ]),
  ];
  const versions = want.map((p) => `${p} ${version(p)}`);
  for (const v of versions) if (v.endsWith(' missing')) fail(`not installed: ${v}`);
  const sqlite = version('better-sqlite3');
  if (app.sqliteMajor && sqlite.split('.')[0] !== String(app.sqliteMajor))
    fail(`better-sqlite3 ${sqlite} installed, expected ${app.sqliteMajor}.x`);
  // The one install line brings none of the optional Nest packages: the app runs without them.
  for (const optional of ['@nestjs/swagger', '@nestjs/event-emitter', '@nestjs/throttler', '@nestjs/typeorm']) {
    if (!want.includes(optional) && version(optional) !== 'missing') fail(`${optional} was installed though this app did not ask for it`);
  }
  versions.push(`node_modules ${diskMegabytes(join(dir, 'node_modules'))} MB`);
  const nested = join(dir, 'node_modules', PACKAGE, 'node_modules', '@nestjs');
  if (existsSync(nested)) fail(`${PACKAGE} got its own copy of @nestjs packages (${nested})`);
  checkShippedLinks(join(dir, 'node_modules', PACKAGE));
  return versions.join(', ');
}

/** Size on disk of a directory, in MB (du). */
function diskMegabytes(path) {
  const out = spawnSync('du', ['-sk', path], { encoding: 'utf8' }).stdout;
  return (Number(out.split(/\s/)[0]) / 1024).toFixed(0);
}

/**
 * What a user opens from the installed package: every relative link of its README (and of the docs it
 * links) names a file in the package, and every source map carries its sources (none points at ../src).
 */
function checkShippedLinks(pkgDir) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue; // absolute (https:, mailto:)
      const resolved = resolve(dirname(file), decodeURIComponent(target));
      if (!existsSync(resolved)) fail(`the installed package's ${relative(pkgDir, file)} links ${target}, which the package does not ship`);
      if (resolved.endsWith('.md')) visit(resolved);
    }
  };
  visit(join(pkgDir, 'README.md'));
  const maps = readdirSync(join(pkgDir, 'dist'), { recursive: true }).filter((f) => String(f).endsWith('.map'));
  for (const m of maps) {
    const map = JSON.parse(readFileSync(join(pkgDir, 'dist', String(m)), 'utf8'));
    if (!Array.isArray(map.sourcesContent) || map.sourcesContent.length !== map.sources.length) {
      fail(`dist/${m} points at ${map.sources.join(', ')} without their content: the package does not ship src/`);
    }
  }
}

// --- the package's declarations as strict hosts compile them ----------------------------------------------

/** Each entry of the package and names it must export with their types. */
const ENTRIES = {
  '': ['WebhookTriggerModule', 'WebhookBot', 'WebhookBotHost', 'WebhookTriggersAdmin'],
  '/redis': ['RedisRateLimitStorage', 'RedisClusterBus', 'BullMqBotRunner'],
  '/testing': ['createWebhookTriggerHarness', 'runBot', 'TestClock'],
  '/terminus': ['WebhookTriggerHealthIndicator'],
};

/**
 * The module resolutions a host of this kind may compile with (`module` beside each; a CommonJS app's files are
 * CommonJS). TypeScript 6 (NestJS 12's) flags node10 as deprecated unless the host says `ignoreDeprecations`, as
 * such a host has to. `checkLibs: false`: node16 models Node 16, which cannot require() an ES module, so on NestJS 12
 * (ES modules) it reports TS1479 in the package's CommonJS declarations; docs/configuration.md says to use nodenext
 * there, or skipLibCheck, with which the main entry is checked.
 */
function typeResolutions(app, tsMajor) {
  const esm = app.moduleType === 'module';
  return [
    { moduleResolution: 'node10', module: esm ? 'es2022' : 'commonjs', ...(tsMajor >= 6 ? { ignoreDeprecations: '6.0' } : {}) },
    { moduleResolution: 'node16', module: 'node16', checkLibs: app.nest < 12 },
    { moduleResolution: 'nodenext', module: 'nodenext' },
    ...(esm ? [{ moduleResolution: 'bundler', module: 'es2022' }] : []),
  ];
}

/**
 * Type-checks small consumer files with the app's own TypeScript under each module resolution of `typeResolutions`:
 * root.ts imports only the main entry and compiles with skipLibCheck: false and none of the optional peers installed
 * (every .d.ts the entry reaches is checked, so none may name a package the host may not have), a bot in it, and
 * `@WebhookBot()` on a class without main() that must not compile (`// @ts-expect-error`); entries.ts imports
 * every entry and compiles with skipLibCheck: true as `nest new` sets it (a subpath's declarations may name its own
 * peer), each import resolving to the package's declarations (an untyped or unresolved entry is an error under
 * strict). The files live in types-check/ only for this step: the app's own build would take them in.
 */
async function checkTypes(app, dir, { npmEnv, logFile }) {
  const optional = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).peerDependenciesMeta ?? {});
  const absent = optional.filter((p) => installedVersion(dir, p) === 'missing');
  if (!absent.includes('@opentelemetry/api'))
    fail('@opentelemetry/api is installed in the app: the main entry cannot be checked without it');
  const checkDir = join(dir, 'types-check');
  mkdirSync(checkDir, { recursive: true });
  const importLine = (entry, names) => `import { ${names.join(', ')} } from '${PACKAGE}${entry}';`;
  const root = ENTRIES[''];
  writeFileSync(
    join(checkDir, 'root.ts'),
    `${importLine('', root)}

export const used = [${root.join(', ')}];

@WebhookBot({ id: 'typed' })
export class TypedBot extends WebhookBotHost {
  async main(): Promise<{ title: string; message: string }[]> {
    return [];
  }
}

// @ts-expect-error: @WebhookBot() takes a class with the main() the runner calls
@WebhookBot({ id: 'no-main' })
export class NoMainBot {}
`,
  );
  const all = Object.entries(ENTRIES);
  writeFileSync(
    join(checkDir, 'entries.ts'),
    `${all.map(([entry, names]) => importLine(entry, names)).join('\n')}\n\nexport const used = [${all.flatMap(([, n]) => n).join(', ')}];\n`,
  );
  const done = [];
  try {
    const tsVersion = installedVersion(dir, 'typescript');
    for (const { moduleResolution, module, checkLibs = true, ...more } of typeResolutions(app, Number(tsVersion.split('.')[0]))) {
      for (const [file, skipLibCheck] of [
        ['root.ts', !checkLibs],
        ['entries.ts', true],
      ]) {
        const config = join(checkDir, `tsconfig.${moduleResolution}.${file.replace('.ts', '')}.json`);
        const compilerOptions = {
          strict: true,
          skipLibCheck,
          noEmit: true,
          target: 'es2022',
          module,
          moduleResolution,
          esModuleInterop: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          types: ['node'],
          ...more,
        };
        writeFileSync(config, `${JSON.stringify({ compilerOptions, files: [file] }, null, 2)}\n`);
        await run('npx', ['tsc', '-p', config], { cwd: dir, env: npmEnv, logFile, timeoutMs: 5 * 60_000 }).catch((e) => {
          const errors = (e.output ?? '').split('\n').filter((l) => /error TS\d+/.test(l));
          fail(
            `types-check/${file} (moduleResolution ${moduleResolution}, skipLibCheck ${skipLibCheck}): ${errors.slice(0, 8).join(' | ') || e.message}`,
          );
        });
      }
      done.push(checkLibs ? moduleResolution : `${moduleResolution} (skipLibCheck)`);
    }
  } finally {
    rmSync(checkDir, { recursive: true, force: true });
  }
  const entries = Object.keys(ENTRIES).map((e) => PACKAGE + e);
  return `TypeScript ${installedVersion(dir, 'typescript')}, ${done.join(', ')}: the main entry with skipLibCheck false, without ${absent.join(', ')}; every entry resolves (${entries.join(', ')})`;
}

// --- docs/testing.md in the app -----------------------------------------------------------------------------

/**
 * Longest 30 of docs/testing.md's specs may take together (the issue's bound), by the runner's own duration of each
 * spec (its hooks included: the kit started and closed). The file's time from start to end is reported beside it:
 * it adds the runner loading Nest, TypeORM and the package once (up to 1.3 s with Jest on the CI machine).
 */
const THIRTY_SPECS_MS = 3000;

/**
 * docs/testing.md's spec, with `runner` (jest | vitest): the runner `nest new` set up (`npm test` as it is), or the
 * other one, installed and configured as the doc says. Writes the doc's files, a copy of the spec grown to 30
 * specs (describe.each over rounds), runs both files and reads the runner's JSON report: every spec passed, the
 * 30 specs' durations together under THIRTY_SPECS_MS.
 */
async function runDocSpec(app, dir, runner, { scaffold, npmEnv, logFile, tmp }) {
  if (scaffold && runner === 'jest') {
    // The lines docs/testing.md asks a NestJS 11 app to add to package.json's "jest" section.
    const file = join(dir, 'package.json');
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    const added = JSON.parse(testingBlock('testing:jest-nest11')).jest;
    if (!pkg.jest || !added) fail('the app has no "jest" section in package.json, or <!-- testing:jest-nest11 --> adds none');
    writeFileSync(file, `${JSON.stringify({ ...pkg, jest: { ...pkg.jest, ...added } }, null, 2)}\n`);
  }
  if (!scaffold) {
    if (runner === 'vitest') {
      const line = TESTING_DOC.match(/\*\*Vitest on NestJS 11\*\*: `(npm install -D [^`]+)`/)?.[1];
      if (!line) fail('docs/testing.md does not say how to install Vitest on NestJS 11 ("**Vitest on NestJS 11**: `npm install -D …`")');
      await run('npm', line.split(/\s+/).slice(1), { cwd: dir, env: npmEnv, logFile, timeoutMs: 10 * 60_000 });
      writeFileSync(join(dir, 'vitest.config.ts'), `${testingBlock('testing:vitest-config')}\n`);
    } else {
      const line = testingBlock('testing:jest-install').trim();
      if (!line.startsWith('npm install -D ') || line.includes('\n')) fail('<!-- testing:jest-install --> is not one npm install -D line');
      await run('npm', line.split(/\s+/).slice(1), { cwd: dir, env: npmEnv, logFile, timeoutMs: 10 * 60_000 });
      const type = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type;
      writeFileSync(join(dir, type === 'module' ? 'jest.config.cjs' : 'jest.config.js'), `${testingBlock('testing:jest-config')}\n`);
    }
  }
  // The app's whole suite, as its `npm test` (or the doc's runner) runs it; then the 30 specs alone, timed (the
  // first run warmed the runner's transform cache, as a developer's second run finds it).
  const base = scaffold ? ['npm', 'test', '--'] : runner === 'jest' ? ['npx', 'jest'] : ['npx', 'vitest', 'run'];
  const whole = await runnerReport(app, dir, runner, base, [], { npmEnv, logFile, tmp });
  const doc = reportFile(whole, 'summarize.bot.spec.ts');
  if (!doc || doc.assertionResults.length < 5) fail(`${runner} did not run docs/testing.md's spec (src/summarize.bot.spec.ts)`);
  const alone = await runnerReport(app, dir, runner, base, ['src/thirty-specs.spec.ts'], { npmEnv, logFile, tmp });
  const thirty = reportFile(alone, 'thirty-specs.spec.ts');
  if (!thirty || thirty.assertionResults.length < 30) fail(`${runner} ran ${thirty?.assertionResults.length ?? 0} of the 30 specs`);
  const durations = thirty.assertionResults.map((a) => a.duration);
  if (durations.some((d) => typeof d !== 'number')) fail(`${runner}'s report gives no duration for some of the 30 specs`);
  const specsMs = Math.round(durations.reduce((a, b) => a + b, 0));
  const fileMs = Math.round(thirty.endTime - thirty.startTime);
  if (!(specsMs < THIRTY_SPECS_MS))
    fail(`${runner}: the ${durations.length} specs took ${specsMs} ms together (bound ${THIRTY_SPECS_MS} ms; the file ${fileMs} ms)`);
  const how = scaffold ? 'npm test as `nest new` set it up' : 'installed and configured from docs/testing.md';
  return `${how}: ${whole.numPassedTests} passed (docs' spec: ${doc.assertionResults.length}); the ${durations.length} specs alone in ${specsMs} ms together, their file in ${fileMs} ms`;
}

/** Runs `runner` with a JSON report; fails unless every spec it ran passed. Returns the report. */
async function runnerReport(app, dir, runner, base, files, { npmEnv, logFile, tmp }) {
  const report = join(tmp, `${app.name}-${runner}.json`);
  const reportArgs = runner === 'jest' ? ['--json', `--outputFile=${report}`] : ['--reporter=json', `--outputFile=${report}`];
  rmSync(report, { force: true });
  await run(base[0], [...base.slice(1), ...reportArgs, ...files], {
    cwd: dir,
    env: { ...npmEnv, CI: '1' },
    logFile,
    timeoutMs: 5 * 60_000,
  }).catch((e) => {
    if (!existsSync(report)) throw e;
  });
  if (!existsSync(report)) fail(`${runner} wrote no report`);
  const result = JSON.parse(readFileSync(report, 'utf8'));
  const failures = result.testResults
    .flatMap((r) =>
      r.assertionResults
        .filter((a) => a.status !== 'passed')
        .map((a) => `${relative(dir, r.name)}: ${a.fullName}: ${a.failureMessages?.join(' ').slice(0, 400)}`),
    )
    .concat(
      result.testResults.filter((r) => r.status !== 'passed').map((r) => `${relative(dir, r.name)}: ${String(r.message).slice(0, 600)}`),
    );
  if (failures.length || result.numFailedTests > 0 || result.numPassedTests === 0)
    fail(`${runner}: ${failures.join('\n') || 'no spec passed'}`);
  return result;
}

/** The report's entry for `src/<name>`. */
function reportFile(result, name) {
  return result.testResults.find((r) => r.name.endsWith(`/src/${name}`));
}

/** Writes docs/testing.md's bot and spec into the app, and the spec grown to at least 30 specs. */
function writeDocSpec(dir) {
  const spec = testingBlock('testing:spec');
  writeFileSync(join(dir, 'src/slow.bot.ts'), `${testingBlock('testing:slow-bot')}\n`);
  writeFileSync(join(dir, 'src/summarize.bot.spec.ts'), `${spec}\n`);
  const specs = spec.match(/^\s+it\(/gm)?.length ?? 0;
  const opening = spec.match(/^describe\((['"])/m);
  if (!specs || !opening) fail('<!-- testing:spec --> has no top-level describe( with it( specs');
  const rounds = Array.from({ length: Math.ceil(30 / specs) }, (_, i) => i + 1);
  const grown = spec.replace(
    /^describe\((['"])(.*?)\1, /m,
    (_, q, title) => `describe.each(${JSON.stringify(rounds)})(${q}${title} (round %i)${q}, `,
  );
  writeFileSync(join(dir, 'src/thirty-specs.spec.ts'), `${grown}\n`);
  return `src/slow.bot.ts, src/summarize.bot.spec.ts (${specs} specs), src/thirty-specs.spec.ts (${specs * rounds.length} specs)`;
}

// --- one app ---------------------------------------------------------------------------------------------

async function testApp(app, ctx) {
  const t0 = Date.now();
  const timings = [];
  const logFile = join(ctx.tmp, `${app.name}.log`);
  const dir = join(ctx.tmp, 'apps', app.name);
  const npmEnv = ctx.npmEnv;
  const step = async (label, fn) => {
    const s = Date.now();
    log(`${app.name}: ${label} …`);
    const detail = await fn();
    timings.push([label, Date.now() - s]);
    log(`${app.name}: ${label} ok (${secs(Date.now() - s)}s)${detail ? `: ${detail}` : ''}`);
  };
  let proc;
  let db;
  try {
    await step(`nest new (${app.cli})`, async () => {
      await run('npx', ['-y', app.cli, 'new', app.name, '--skip-git', '--package-manager', 'npm', '--skip-install'], {
        cwd: join(ctx.tmp, 'apps'),
        env: npmEnv,
        logFile,
        timeoutMs: 5 * 60_000,
      });
      return checkGeneratedApp(app, dir);
    });
    const lines = [...installLines(app, ctx.tarball), ...(app.extras ?? []).map(extrasLine)];
    for (const words of lines) {
      const shown = words.map((w) => (w === ctx.tarball ? `<${PACKAGE}.tgz>` : w)).join(' ');
      await step(shown, async () => {
        const out = await run(words[0], words.slice(1), { cwd: dir, env: npmEnv, logFile, timeoutMs: 10 * 60_000 });
        return out.match(/(added|changed|up to date)[^\n]*in [^\n]*/g)?.at(-1);
      });
    }
    await step('installed versions', async () => {
      const native = await shareNativeBuild(dir, ctx, logFile);
      return [checkInstalled(app, dir), native].filter(Boolean).join('; ');
    });
    await step("the package's declarations in strict consumers (tsc --noEmit)", () => checkTypes(app, dir, { npmEnv, logFile }));
    await step('write README snippets', async () => writeAppCode(app, dir).join(', '));
    await step('npm run build', async () => {
      await run('npm', ['run', 'build'], { cwd: dir, env: npmEnv, logFile, timeoutMs: 5 * 60_000 });
      if (!existsSync(join(dir, 'dist/main.js'))) fail('npm run build wrote no dist/main.js');
    });

    const port = await freePort();
    const env = {
      PORT: String(port),
      INSTALL_TEST_SETUP: '1',
      NO_COLOR: '1',
      ADMIN_TOKEN: 'install-test-admin-token-0123456789',
      ...app.env,
    };
    if (app.db === 'postgres') {
      db = await createScratchDb();
      env.DATABASE_URL = db.url;
    }
    let setup;
    await step(`start node dist/main.js on port ${port}${db ? ` (database ${db.name})` : ''}`, async () => {
      proc = startApp(dir, env);
      const m = await proc.waitForLine(/^INSTALL_TEST_SETUP (.*)$/m, 90_000);
      setup = JSON.parse(m[1]);
      const { bot, credits, trigger } = setup;
      if (credits?.credits !== 10) fail(`setCredits(${bot.accountId}, 10) then getCredits gave ${JSON.stringify(credits)}`);
      if (!trigger.key || !trigger.url.endsWith(`/webhooks/${trigger.id}/trigger`)) fail(`createTrigger gave ${JSON.stringify(trigger)}`);
      // The startup warning of better-sqlite3 before 13 on Node 24.19 and later: each app's set-up is one that is safe.
      const warned = `${proc.stdout}${proc.stderr}`.match(/better-sqlite3 \S+ on Node \S+ can abort the process/);
      if (warned) fail(`the app warned at startup: ${warned[0]}`);
      return `bot ${bot.id} (account ${bot.accountId}, ${bot.credits} credits per run) funded with 10; trigger ${trigger.id} at ${trigger.url}`;
    });

    await step('the production start loaded nothing of the testing kit (a preload refuses it, and does bite)', async () => {
      const bite = spawnSync(process.execPath, ['--require', noTestingKitPreload, '-e', `require('${PACKAGE}/testing')`], {
        cwd: dir,
        encoding: 'utf8',
      });
      if (bite.status === 0 || !bite.stderr.includes('production loaded the testing kit')) {
        fail(`the preload did not refuse ${PACKAGE}/testing (exit ${bite.status}): ${bite.stderr.slice(0, 400)}`);
      }
      return `node --require no-testing-kit.cjs dist/main.js started; require('${PACKAGE}/testing') under it exits ${bite.status}`;
    });
    await step("the README's first trigger: run the curl the app printed, as pasted", async () => {
      const m = await proc.waitForLine(/^(curl -X POST .*)$/m, 30_000);
      const out = await new Promise((resolvePromise, reject) => {
        const sh = spawn('sh', ['-c', `${m[1]} --silent --show-error --write-out ' HTTP %{http_code}'`], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        sh.stdout.on('data', (d) => (text += d));
        sh.stderr.on('data', (d) => (text += d));
        sh.on('error', reject);
        sh.on('exit', () => resolvePromise(text));
      });
      if (!/^\{"success":true,"invocation":\{"id":"inv_[A-Za-z0-9_-]+"\}\} HTTP 200$/.test(out)) fail(`the printed curl answered: ${out}`);
      return out;
    });

    const { trigger, bot } = setup;
    const base = `http://127.0.0.1:${port}${new URL(trigger.url).pathname}`;
    const example = ctx.example;
    let invocationId;
    await step(`POST trigger ${example.body}`, async () => {
      const res = await http('POST', base, { key: trigger.key, body: example.body });
      if (res.status !== 200) fail(`trigger answered ${res.status}: ${res.text}`);
      // Express announces itself; Fastify does not.
      const poweredBy = res.headers.get('x-powered-by');
      if ((app.adapter === 'express') !== (poweredBy === 'Express')) fail(`served by the wrong adapter (X-Powered-By: ${poweredBy})`);
      invocationId = res.json?.invocation?.id;
      const shape = (o) => JSON.stringify(o, (k, v) => (k === 'id' ? typeof v : v));
      if (typeof invocationId !== 'string' || !invocationId.startsWith('inv_') || shape(res.json) !== shape(example.triggerAnswer)) {
        fail(`trigger answered ${res.text}, expected the shape of the README's ${JSON.stringify(example.triggerAnswer)}`);
      }
      return res.text;
    });
    await step('GET sync', async () => {
      const res = await http('GET', `${base}/invocation/${invocationId}/sync`, { key: trigger.key });
      if (res.status !== 200 || !isDeepStrictEqual(res.json, example.syncAnswer)) {
        fail(`sync answered ${res.status} ${res.text}, expected 200 ${JSON.stringify(example.syncAnswer)} (README)`);
      }
      return res.text;
    });
    await step('GET status', async () => {
      const res = await http('GET', `${base}/invocation/${invocationId}`, { key: trigger.key });
      if (res.status !== 200 || res.json?.invocation?.status !== 'succeeded') fail(`status answered ${res.status} ${res.text}`);
      return `status ${res.json.invocation.status}, charged ${bot.credits} of 10 credits`;
    });
    if (db) {
      await step('rows in the host DataSource', async () => {
        const { default: pg } = await import('pg');
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          const { rows } = await c.query('SELECT status FROM webhook_invocations WHERE id = $1', [invocationId]);
          const acc = await c.query('SELECT credits FROM webhook_accounts WHERE id = $1', [bot.accountId]);
          if (rows[0]?.status !== 'succeeded') fail(`webhook_invocations row: ${JSON.stringify(rows)}`);
          // Two runs charged after the scaffolding funded 10: the README's printed curl and the POST above.
          if (Number(acc.rows[0]?.credits) !== 10 - 2 * bot.credits) fail(`webhook_accounts credits: ${JSON.stringify(acc.rows)}`);
          return `webhook_invocations ${invocationId} succeeded, webhook_accounts ${bot.accountId} has ${acc.rows[0].credits} credits`;
        } finally {
          await c.end();
        }
      });
    }
    await step('admin screens and API (README guard, Basic admin:ADMIN_TOKEN)', async () => {
      const admin = `http://127.0.0.1:${port}/admin`;
      const basic = { Authorization: `Basic ${Buffer.from(`admin:${env.ADMIN_TOKEN}`).toString('base64')}` };
      const refused = await fetch(admin);
      if (refused.status !== 401 || !/^Basic /.test(refused.headers.get('www-authenticate') ?? '')) {
        fail(`GET /admin without credentials answered ${refused.status} (WWW-Authenticate: ${refused.headers.get('www-authenticate')})`);
      }
      const page = await fetch(admin, { headers: basic });
      const html = await page.text();
      if (page.status !== 200 || !html.includes('data-base="/admin"')) fail(`GET /admin answered ${page.status}: ${html.slice(0, 200)}`);
      for (const [file, type] of [
        ['main.js', 'text/javascript'],
        ['api.js', 'text/javascript'],
        ['admin.css', 'text/css'],
      ]) {
        const res = await fetch(`${admin}/assets/${file}`, { headers: basic });
        const body = await res.text();
        if (res.status !== 200 || !res.headers.get('content-type')?.startsWith(type) || body.length < 500) {
          fail(
            `GET /admin/assets/${file} answered ${res.status} ${res.headers.get('content-type')} (${body.length} bytes): the package lacks admin-ui/?`,
          );
        }
      }
      const bots = await http('GET', `${admin}/api/bots`, { headers: basic });
      // Two runs and two triggers: the README's first trigger (and its curl), and the scaffolding's.
      if (bots.status !== 200 || bots.json?.[0]?.id !== bot.id || bots.json[0].runsLast24h !== 2 || bots.json[0].triggers !== 2)
        fail(`GET /admin/api/bots answered ${bots.status} ${bots.text}`);
      // A change from curl, as docs/admin.md shows: Basic credentials need the X-Webhook-Admin header too.
      const change = basic; // http() adds the JSON Content-Type
      const body = JSON.stringify({ name: 'from curl' });
      const refusedChange = await http('POST', `${admin}/api/bots/${bot.id}/triggers`, { headers: change, body });
      if (refusedChange.status !== 403) fail(`a change without X-Webhook-Admin answered ${refusedChange.status}: ${refusedChange.text}`);
      const made = await http('POST', `${admin}/api/bots/${bot.id}/triggers`, { headers: { ...change, 'x-webhook-admin': '1' }, body });
      if (made.status !== 201 || !made.json?.url?.startsWith(`http://127.0.0.1:${port}/`))
        fail(`the change answered ${made.status}: ${made.text}`);
      return `401 without credentials; page, main.js, api.js, admin.css; bots ${bots.text}; a change: 403 without X-Webhook-Admin, 201 with it (url ${made.json.url})`;
    });
    await step('SIGTERM', async () => {
      const s = Date.now();
      proc.child.kill('SIGTERM');
      const exit = await Promise.race([proc.exited, new Promise((r) => setTimeout(() => r(null), 10_000))]);
      if (!exit) fail('the app was still running 10 s after SIGTERM');
      // enableShutdownHooks(): Nest closes the app, then re-raises the signal on itself.
      if (!(exit.code === 0 || exit.signal === 'SIGTERM')) fail(`the app exited with ${JSON.stringify(exit)} after SIGTERM`);
      if (/\bERROR\b/.test(proc.stdout + proc.stderr)) fail('the app logged an ERROR');
      return `exited (${exit.code === 0 ? 'code 0' : 'signal SIGTERM, re-raised by Nest after closing'}) in ${Date.now() - s} ms`;
    });
    await step("without ADMIN_TOKEN: the README's guard refuses the screens saying why, and logs it once", async () => {
      const bare = { ...env, PORT: String(await freePort()) };
      delete bare.ADMIN_TOKEN;
      delete bare.INSTALL_TEST_SETUP;
      proc = startApp(dir, bare);
      // Nest logs "successfully started" at init, before listen() binds the port: call until it answers.
      await proc.waitForLine(/Nest application successfully started/, 90_000);
      const headers = { Authorization: `Basic ${Buffer.from('admin:anything-at-all-0123456789').toString('base64')}` };
      let res;
      for (const deadline = Date.now() + 30_000; !res;) {
        res = await http('GET', `http://127.0.0.1:${bare.PORT}/admin`, { headers }).catch((e) => {
          if (Date.now() > deadline || proc.exit) throw e;
          return new Promise((r) => setTimeout(r, 100));
        });
      }
      if (res.status !== 403 || !/ADMIN_TOKEN/.test(res.json?.message ?? '')) fail(`GET /admin answered ${res.status}: ${res.text}`);
      const logged = (proc.stdout + proc.stderr).split('\n').filter((l) => /AdminGuard.*ADMIN_TOKEN/.test(l));
      if (logged.length !== 1) fail(`expected one AdminGuard line naming ADMIN_TOKEN in the log, found ${logged.length}`);
      proc.child.kill('SIGTERM');
      await proc.exited;
      return `403 ${res.json.message}; logged: ${logged[0].replace(/^.*AdminGuard\]?\s*/, '')}`;
    });
    if (app.kit) {
      await step("docs/testing.md's bot and spec written in", async () => writeDocSpec(dir));
      for (const [runner, scaffold] of [
        [app.kit.scaffold, true],
        [app.kit.other, false],
      ]) {
        await step(`docs/testing.md's spec on ${runner}`, () => runDocSpec(app, dir, runner, { scaffold, npmEnv, logFile, tmp: ctx.tmp }));
      }
      await step('tsc --noEmit: the app with the specs type-checks', async () => {
        await run('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], { cwd: dir, env: npmEnv, logFile, timeoutMs: 5 * 60_000 });
      });
    }
    return { name: app.name, ok: true, ms: Date.now() - t0, timings };
  } catch (e) {
    log(`${app.name}: FAILED: ${e.message}`);
    if (e.output !== undefined) console.log(`--- output of the failed command (tail) ---\n${tail(e.output)}`);
    if (proc) console.log(`--- ${app.name} process output ---\n${proc.output()}`);
    if (!e.installTest) console.log(e.stack);
    return { name: app.name, ok: false, ms: Date.now() - t0, timings, error: e.message };
  } finally {
    if (proc && !proc.exit) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    if (db) await dropScratchDb(db.name).catch((e) => log(`could not drop database ${db.name}: ${e.message}`));
  }
}

// --- main --------------------------------------------------------------------------------------------------

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'webhook-install-'));
  noTestingKitPreload = join(tmp, 'no-testing-kit.cjs');
  writeFileSync(noTestingKitPreload, NO_TESTING_KIT);
  const cleanup = () => {
    for (const c of children) c.kill('SIGKILL');
    if (!keep) {
      try {
        rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
      } catch (e) {
        log(`could not remove ${tmp}: ${e.message}`);
      }
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      log(`${sig}: stopping`);
      cleanup();
      const drop = scratchDb ? dropScratchDb(scratchDb).catch(() => undefined) : Promise.resolve();
      void drop.then(() => process.exit(1));
    });
  }
  // One npm cache for everything (npm's own, shared with npx); no audit, fund or update notices.
  const npmEnv = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' };
  const results = [];
  try {
    log(`README.md: ${Buffer.byteLength(README)} bytes; temp dir ${tmp}`);
    const example = curlExample();
    const apps = APPS.filter((a) => (only ? only.includes(a.name) : !a.minNode || nodeAtLeast(a.minNode)));
    for (const a of APPS.filter((a) => !apps.includes(a) && !only)) {
      log(`${a.name}: not on Node ${process.version} (it needs ${a.minNode.join('.')} or later; CI runs it on a newer Node line)`);
    }
    for (const a of apps) {
      if (a.minNode && !nodeAtLeast(a.minNode)) fail(`${a.name} needs Node ${a.minNode.join('.')} or later, this is ${process.version}`);
    }
    // Fail on a README that lost a marker before spending minutes on installs.
    for (const a of apps) {
      installLines(a, 'x.tgz');
      for (const e of a.extras ?? []) extrasLine(e);
      readmeBlock(`snippet:${a.module}`);
    }
    readmeBlock('snippet:bot');
    readmeBlock('snippet:main');
    readmeBlock('snippet:admin-module');
    readmeBlock('snippet:admin-guard');

    log(`Node ${process.version} (${process.execPath}), npm ${spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
    const s = Date.now();
    log('npm pack (prepack builds dist/) …');
    const packLog = join(tmp, 'pack.log');
    await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: ROOT, env: npmEnv, logFile: packLog, timeoutMs: 5 * 60_000 });
    const tarball = join(tmp, `${PACKAGE}-${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}.tgz`);
    if (!existsSync(tarball)) fail(`npm pack wrote no ${tarball}`);
    log(`npm pack ok (${secs(Date.now() - s)}s): ${tarball}`);
    mkdirSync(join(tmp, 'apps'));

    const ctx = { tmp, tarball, npmEnv, example, prebuilds: join(tmp, 'prebuilds') };
    for (const app of apps) results.push(await testApp(app, ctx));
  } catch (e) {
    console.log(`\nINSTALL TESTS FAILED: ${e.message}`);
    if (e.output !== undefined) console.log(`--- output of the failed command (tail) ---\n${tail(e.output)}`);
    if (!e.installTest) console.log(e.stack);
    results.push({ name: 'setup', ok: false, error: e.message });
  } finally {
    cleanup();
  }

  console.log(`\n=== install tests on Node ${process.version} (${secs(Date.now() - started)}s in all)`);
  for (const r of results) {
    console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.ms !== undefined ? ` (${secs(r.ms)}s)` : ''}${r.error ? `: ${r.error}` : ''}`);
    for (const [label, ms] of r.timings ?? []) console.log(`       ${secs(ms).padStart(6)}s  ${label}`);
  }
  if (keep) console.log(`kept: ${tmp}`);
  const ok = results.length > 0 && results.every((r) => r.ok);
  process.exitCode = ok ? 0 : 1;
}

await main();
