import { execFile } from 'node:child_process';
import { join } from 'node:path';

// The layering of src/ (.dependency-cruiser.cjs, .dependency-cruiser.folders.cjs) as a test, so that a mutation
// row can plant a forbidden import and see a test fail (scripts/mutation-check.sh runs Jest tests only). It runs
// the real depcruise, as `npm run lint:deps` does, in a child process: about 1.5 s per configuration.

const root = join(__dirname, '..');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** The violations depcruise finds in src/ under one configuration (it exits non-zero when there are any). */
function violationsOf(config: string): Promise<string[]> {
  const bin = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [bin, 'src', '--config', config, '--output-type', 'json'],
      { cwd: root, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        let report: { summary: { violations: Violation[] } };
        try {
          report = JSON.parse(stdout) as typeof report;
        } catch {
          return reject(new Error(`depcruise gave no report (${error?.message ?? 'no error'}): ${stderr}`));
        }
        resolve(report.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`));
      },
    );
  });
}

describe('the dependency rules of src/', () => {
  it('no module imports what its folder may not (SQL classes, drivers, Redis, the testing kit, cycles)', async () => {
    expect(await violationsOf('.dependency-cruiser.cjs')).toEqual([]);
  });

  it('no folders of src/ form a cycle', async () => {
    expect(await violationsOf('.dependency-cruiser.folders.cjs')).toEqual([]);
  });
});
