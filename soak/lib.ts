// The library under test as users get it: the compiled dist/ (`npm run build`; `npm run soak` builds it),
// never the TypeScript sources. Only its types come from ../src, through type-only imports.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type * as Library from '../src/index.js';
import type * as RedisLibrary from '../src/redis/index.js';

/** The repository root (this file runs from soak/dist/soak/). */
export const ROOT = resolve(__dirname, '../../..');

const entry = join(ROOT, 'dist', 'index.js');
if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first (npm run soak does)`);

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled library at a path known only at run time
export const lib = require(entry) as typeof Library;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- `nestjs-webhook-triggers/redis`, compiled
export const redisLib = require(join(ROOT, 'dist', 'redis', 'index.js')) as typeof RedisLibrary;
