// Why src/ writes a run's record field by field (persistence/records.ts, acceptedRecord): on Node 20 (V8 11.3) an
// object literal that adds properties after a spread (`{ ...run, status: 'running', … }`, properties the source
// lacks) takes a slow path on every call, ~0.7 µs and a new hidden class per property added, where writing the
// fields out costs tens of ns. A spread alone, or properties the source already has, stay fast.
// Usage: node bench/tools/spread-micro.cjs   (prints ns per call; no build needed)
const { performance } = require('node:perf_hooks');

const now = new Date();
const record = (i) => ({ id: `r${i}`, triggerId: 't', botId: 'b', accountId: 'a', inputs: {}, credits: 1, createdAt: now });
const claim = { owner: 'node-1', startedAt: now };
const shapes = {
  'spread alone: { ...r }': (r) => ({ ...r }),
  'spread, then a property it has: { ...r, credits }': (r) => ({ ...r, credits: 2 }),
  'spread, then 1 property it lacks: { ...r, claim }': (r) => ({ ...r, claim }),
  'spread, then 4 properties it lacks': (r) => ({ ...r, status: 'running', startedAt: now, owner: claim.owner, attempts: 1 }),
  'the same 4, fields written out': (r) => ({
    id: r.id,
    triggerId: r.triggerId,
    botId: r.botId,
    accountId: r.accountId,
    inputs: r.inputs,
    credits: r.credits,
    createdAt: r.createdAt,
    status: 'running',
    startedAt: now,
    owner: claim.owner,
    attempts: 1,
  }),
};
const records = Array.from({ length: 1000 }, (_, i) => record(i));
let sink;
for (const [name, make] of Object.entries(shapes)) {
  for (let i = 0; i < 100_000; i++) sink = make(records[i % 1000]); // warm up (optimized code)
  const n = 300_000;
  const start = performance.now();
  for (let i = 0; i < n; i++) sink = make(records[i % 1000]);
  const ns = ((performance.now() - start) * 1e6) / n;
  console.log(`${ns.toFixed(0).padStart(6)} ns  ${name}`);
}
if (!sink) throw new Error('unreachable');
console.log(`(${process.version})`);
