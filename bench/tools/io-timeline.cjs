// Where a request's time goes when it waits rather than computes (a CPU profile shows neither a COMMIT that waits
// for another's WAL flush nor a Redis round trip): a timeline of every HTTP request and answer, `pg` query and
// ioredis command in a process, with the time each one was sent and answered. What showed that at 1 connection on
// PostgreSQL + Redis a trigger's accept COMMIT waits behind the previous run's claim and finish COMMITs (bench/README.md,
// "Targets not met, and why").
// Usage (after `npm run bench:build`):
//   IO_TIMELINE_DIR=/tmp/tl NODE_OPTIONS="--require $PWD/bench/tools/io-timeline.cjs" BENCH_ONLY=cluster node bench/dist/bench/run.js
//     every process that loads pg or ioredis writes its last 6,000 events to /tmp/tl/io-timeline-<pid>.json, every 2 s
//   node bench/tools/io-timeline.cjs show <file> [N=4]
//     the last N requests of that file, each with what happened from just before it arrived until its answer, in ms
//     from its arrival, and the median time of each kind of query and command (sent → answered) in the file
const { performance } = require('node:perf_hooks');
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const KEEP = 6_000;

if (require.main === module) show(process.argv.slice(2));
else if (process.env.IO_TIMELINE_DIR) record(process.env.IO_TIMELINE_DIR);

function record(dir) {
  const events = [];
  let seq = 0;
  let drivers = 0;
  const note = (...event) => {
    events.push([Number(performance.now().toFixed(3)), ...event]);
    if (events.length > KEEP * 1.5) events.splice(0, events.length - KEEP);
  };
  const http = require('node:http');
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (name, req, res) {
    if (name === 'request') {
      const id = ++seq;
      note('request', id, `${req.method} ${req.url.slice(0, 60)}`);
      res.once('finish', () => note('answered', id, res.statusCode));
    }
    return emit.apply(this, arguments);
  };
  const Module = require('node:module');
  const load = Module._load;
  const patched = new Set();
  Module._load = function (request) {
    const loaded = load.apply(this, arguments);
    if (request === 'pg' && loaded?.Client && !patched.has(loaded.Client)) {
      patched.add(loaded.Client);
      drivers++;
      const query = loaded.Client.prototype.query;
      loaded.Client.prototype.query = function (text, ...rest) {
        const id = ++seq;
        const sql = typeof text === 'string' ? text : (text?.text ?? '?');
        note('pg', id, sql.replace(/\s+/g, ' ').slice(0, 50));
        const result = query.call(this, text, ...rest);
        if (typeof result?.then === 'function')
          result.then(
            () => note('done', id),
            () => note('failed', id),
          );
        return result;
      };
    }
    if (request === 'ioredis' && loaded?.prototype?.sendCommand && !patched.has(loaded)) {
      patched.add(loaded);
      drivers++;
      const send = loaded.prototype.sendCommand;
      loaded.prototype.sendCommand = function (command) {
        const id = ++seq;
        // A script is named by its sha's first characters; the connection's name says whose it is.
        const name = command.name === 'evalsha' ? `evalsha ${String(command.args[0]).slice(0, 6)}` : command.name;
        note('redis', id, `${name} (${this.options?.connectionName ?? ''})`);
        command.promise?.then(
          () => note('done', id),
          () => note('failed', id),
        );
        return send.apply(this, arguments);
      };
    }
    return loaded;
  };
  const file = join(dir, `io-timeline-${process.pid}.json`);
  setInterval(() => drivers > 0 && writeFileSync(file, JSON.stringify(events.slice(-KEEP))), 2_000).unref();
}

function show([command, file, n = '4']) {
  if (command !== 'show' || !file) {
    console.error('usage: node bench/tools/io-timeline.cjs show <io-timeline-<pid>.json> [N]');
    process.exit(2);
  }
  const events = JSON.parse(readFileSync(file, 'utf8'));
  const sent = new Map();
  const took = new Map();
  for (const [at, kind, id, what] of events) {
    if (kind === 'pg' || kind === 'redis') sent.set(id, [at, `${kind} ${kind === 'pg' ? what.slice(0, 24) : what}`]);
    if ((kind === 'done' || kind === 'failed') && sent.has(id)) {
      const [from, name] = sent.get(id);
      took.set(name, [...(took.get(name) ?? []), at - from]);
    }
  }
  const names = new Map(events.filter((e) => e[1] !== 'done' && e[1] !== 'failed').map((e) => [e[2], `${e[1]} ${e[3]}`]));
  const requests = events.filter((e) => e[1] === 'request');
  for (const [arrived, , id] of requests.slice(-Number(n) - 1, -1)) {
    const end = events.find((e) => e[1] === 'answered' && e[2] === id)?.[0] ?? arrived + 20;
    console.log(`--- request ${id}: answered after ${(end - arrived).toFixed(2)} ms`);
    for (const [at, kind, eid, what] of events) {
      if (at < arrived - 0.5 || at > end) continue;
      const label = kind === 'done' || kind === 'failed' ? `  ${kind}: ${names.get(eid) ?? eid}` : `${kind} ${what ?? ''}`;
      console.log(`${(at - arrived).toFixed(2).padStart(8)}  ${label}`);
    }
  }
  console.log('--- median sent → answered, ms (count)');
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name, times] of [...took].sort((a, b) => b[1].length - a[1].length).slice(0, 15))
    console.log(`${median(times).toFixed(2).padStart(8)}  (${times.length})  ${name}`);
}
