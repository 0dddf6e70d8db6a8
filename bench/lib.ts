// The library under test, as users get it: the compiled dist/index.js (`npm run build`), never the
// TypeScript sources. Only its types come from ../src, through a type-only import.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type * as Library from '../src/index.js';
import type * as RedisLibrary from '../src/redis/index.js';

/** The repository root: the nearest directory upwards whose package.json is this library's. */
export function repoRoot(from = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'nestjs-webhook-triggers') return dir;
    if (dirname(dir) === dir) throw new Error(`no nestjs-webhook-triggers package.json above ${from}`);
  }
}

const entry = join(repoRoot(), 'dist', 'index.js');
if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first (npm run bench does)`);

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled library at a path known only at run time
export const lib = require(entry) as typeof Library;

const redisEntry = join(repoRoot(), 'dist', 'redis', 'index.js');
/** `nestjs-webhook-triggers/redis`, compiled. */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled library at a path known only at run time
export const redisLib = require(redisEntry) as typeof RedisLibrary;
