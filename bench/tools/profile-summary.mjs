// Summarises a V8 .cpuprofile (from BENCH_CPU_PROF): self time by area (this library, Nest, Fastify,
// Express, TypeORM, better-sqlite3/SQLite, Node internals, GC, idle) and the top functions by self time.
// Usage: node bench/tools/profile-summary.mjs <file.cpuprofile> [top=25] [--per N]
// --per N prints µs per unit (e.g. per trigger and run, N of them profiled) instead of shares of the sampled time.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const perAt = args.indexOf('--per');
const per = perAt >= 0 ? Number(args.splice(perAt, 2)[1]) : undefined;
const [file, topArg] = args;
if (!file || (per !== undefined && !(per > 0))) {
  console.error('usage: node bench/tools/profile-summary.mjs <file.cpuprofile> [top] [--per N]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
// samples[i] was taken in node samples[i]; timeDeltas[i] is the time since the previous sample.
for (let i = 0; i < profile.samples.length; i++)
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function area(frame) {
  const url = frame.url ?? '';
  const name = frame.functionName;
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'V8 (program)';
  if (url.includes('/node_modules/')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const pkg = m ? m[1] : 'node_modules';
    if (pkg.startsWith('@nestjs/')) return pkg;
    return pkg;
  }
  if (url.includes('/dist/') || url.includes('/src/')) return 'this library';
  if (url.startsWith('node:') || url === '') return name.startsWith('(') ? name : 'Node internals / native';
  return 'other';
}

const areas = new Map();
const functions = new Map();
for (const [id, us] of self) {
  const frame = byId.get(id).callFrame;
  const a = area(frame);
  areas.set(a, (areas.get(a) ?? 0) + us);
  const key = `${frame.functionName || '(anonymous)'}  ${(frame.url ?? '').replace(/^.*\/(node_modules|dist|src)\//, '$1/')}:${frame.lineNumber + 1}`;
  functions.set(key, (functions.get(key) ?? 0) + us);
}
const pct = (us) => (per ? `${(us / per).toFixed(2).padStart(7)} µs` : `${((100 * us) / total).toFixed(1).padStart(5)} %`);
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
console.log('\nself time by area');
for (const [a, us] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 20)) console.log(`  ${pct(us)}  ${a}`);
console.log(`\ntop ${Number(topArg ?? 25)} functions by self time`);
for (const [f, us] of [...functions].sort((x, y) => y[1] - x[1]).slice(0, Number(topArg ?? 25))) console.log(`  ${pct(us)}  ${f}`);
