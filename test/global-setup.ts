/**
 * Jest globalSetup of the `process` project (jest.config.js): builds the sample app once per run, as
 * `npm run build:sample` does, before the suites that start it as a process. Jest runs it only when a
 * suite of that project is selected, so unit, e2e and service runs do not pay for it. The library's own
 * dist/ is not needed: the sample app compiles the library from src/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');

/**
 * What the build leaves for `npm start` and `npm run start:worker`. sample-app/tsconfig.json compiles from
 * the repo root (the app imports the library from ../../src), hence dist/sample-app/src/.
 */
export const SAMPLE_APP_ENTRIES = {
  main: join(ROOT, 'sample-app/dist/sample-app/src/main.js'),
  worker: join(ROOT, 'sample-app/dist/sample-app/src/worker.js'),
} as const;

export default function buildSampleApp(): void {
  const started = performance.now();
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'sample-app/tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`tsc -p sample-app/tsconfig.json failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`);
  }
  for (const entry of Object.values(SAMPLE_APP_ENTRIES)) {
    if (!existsSync(entry)) throw new Error(`tsc -p sample-app/tsconfig.json did not produce ${entry}`);
  }
  process.stdout.write(
    `\nglobalSetup: built the sample app (tsc -p sample-app/tsconfig.json) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
}
