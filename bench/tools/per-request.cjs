// What one trigger and its run make in the server, counted rather than timed (counts do not move with the
// machine's noise, timings here do by ±15 % from one round to the next): the promises created (an async hook,
// grouped by the creating frame in the compiled library or, outside it, the first frame) and the bytes allocated
// (V8's sampling heap profiler, objects already collected included). The Fastify trigger contender
// (contenders/nest-trigger.ts, the module's default options, `echo`), 3,000 triggers of warm-up, then N measured
// over 20 keep-alive connections, their runs finished before the count ends.
// Usage (after `npm run bench:build`):
//   node bench/tools/per-request.cjs promises [N=2000] [--sdk]   promises per trigger and run, top creators
//   node bench/tools/per-request.cjs heap [N=10000] [--sdk]      KB allocated per trigger and run, by package
//   node bench/tools/per-request.cjs statements [N=20000]        µs of SQLite per trigger and run, by statement
//   node bench/tools/per-request.cjs cpu [N=20000] [--sdk]       µs of CPU per trigger and run (process.cpuUsage),
//                                                                and V8's CPU profile of them, by area and function
//                                                                (profile-summary.mjs --per N; CPU_PROFILE=<file> keeps
//                                                                the profile; the profiler's sampling, every 100 µs, is
//                                                                in the CPU)
// --sdk preloads contenders/otel-sdk.js (the OpenTelemetry cost phase's SDK, AsyncLocalStorage context manager).
// ADAPTER=express measures the Express contender instead of Fastify. TOP=<n> lists that many rows (25 creators of
// promises, 12 allocators by default). HEAP_BY=function lists the allocating functions (file:line, and the package
// they were called for) instead of packages: what found a spread on the accept path allocating 5 KB per trigger.
// CHILD_FLAGS="--no-turbo-inlining --max-inlined-bytecode-size=0" keeps V8 from inlining callees into their
// callers, so each function is charged what it allocates itself.
// `statements` times every better-sqlite3 statement the server runs (prepared statements' run/get/all, COMMIT
// included) with process.hrtime around the call: what found the group commit's statement journals going to a
// temporary file (INSERT 45 µs, then 17 µs with them in memory). It is a timing, so it moves with the machine.
const { fork } = require('node:child_process');
const { request, Agent } = require('node:http');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const contenders = join(root, 'bench', 'dist', 'bench', 'contenders');

// Run as the command, or preloaded (`--require`) into the server it forks, which it tells by the environment.
if (process.env.PER_REQUEST_KIND) child();
else
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });

async function main() {
  const [kind = 'promises', n, ...flags] = process.argv.slice(2);
  if (!['promises', 'heap', 'statements', 'cpu'].includes(kind))
    throw new Error('usage: per-request.cjs promises|heap|statements|cpu [N] [--sdk]');
  const count = Number(n || { promises: 2_000, heap: 10_000, statements: 20_000, cpu: 20_000 }[kind]);
  const sdk = flags.includes('--sdk');
  const server = fork(
    join(contenders, 'nest-trigger.js'),
    [JSON.stringify({ adapter: process.env.ADAPTER || 'fastify', waiters: false })],
    {
      execArgv: [
        ...(process.env.CHILD_FLAGS ? process.env.CHILD_FLAGS.split(' ') : []),
        '--require',
        __filename,
        ...(sdk ? ['--require', join(contenders, 'otel-sdk.js')] : []),
      ],
      env: { ...process.env, PER_REQUEST_KIND: kind },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  const { port, triggers } = await new Promise((resolve) => server.on('message', (m) => m.type === 'ready' && resolve(m)));
  const agent = new Agent({ keepAlive: true, maxSockets: 20 });
  const body = JSON.stringify({ hello: 'world', n: 1 });
  const send = () =>
    new Promise((resolve, reject) => {
      const headers = { 'content-type': 'application/json', 'x-key': triggers.echo.key, 'content-length': Buffer.byteLength(body) };
      const req = request(
        { agent, port, host: '127.0.0.1', method: 'POST', path: `/webhooks/${triggers.echo.id}/trigger`, headers },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`answered ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const drive = async (total) => {
    let sent = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (sent++ < total) await send();
      }),
    );
  };
  // `cpu` keeps its profile in CPU_PROFILE, or in a temporary file summarised below and removed.
  const profileFile = process.env.CPU_PROFILE || join(require('node:os').tmpdir(), `per-request-${process.pid}.cpuprofile`);
  const ask = (op) =>
    new Promise((resolve) => {
      server.once('message', resolve);
      server.send({ perRequest: op, profileFile });
    });
  await drive(3_000);
  await new Promise((r) => setTimeout(r, 500));
  await ask('start');
  await drive(count);
  await new Promise((r) => setTimeout(r, 500)); // the last runs finish
  const report = await ask('stop');
  server.kill();
  agent.destroy();
  if (kind === 'promises') {
    const own = report.top.filter(([where]) => where.startsWith('module: ')).reduce((sum, [, k]) => sum + k, 0);
    console.log(
      `${(report.total / count).toFixed(1)} promises per trigger and run (${report.total} over ${count})${sdk ? ', SDK registered' : ''}`,
    );
    console.log(`${(own / count).toFixed(1)} of them made in the compiled library (dist/); the top creators:`);
    for (const [where, k] of report.top.slice(0, Number(process.env.TOP || 25)))
      console.log(`${(k / count).toFixed(2).padStart(7)}  ${where}`);
  } else if (kind === 'statements') {
    console.log(
      `${(report.total / count).toFixed(1)} µs of SQLite statements per trigger and run${sdk ? ', SDK registered' : ''} (${count} runs)`,
    );
    for (const [sql, { us, calls }] of report.top.slice(0, Number(process.env.TOP || 12)))
      console.log(
        `${(us / count).toFixed(1).padStart(7)} µs  ${(calls / count).toFixed(3).padStart(6)} ×  ${(us / calls).toFixed(1).padStart(7)} µs each  ${sql}`,
      );
  } else if (kind === 'cpu') {
    console.log(
      `${(report.cpuUs / count).toFixed(1)} µs of CPU per trigger and run${sdk ? ', SDK registered' : ''} (user ${(report.userUs / count).toFixed(1)}, system ${((report.cpuUs - report.userUs) / count).toFixed(1)}; ${count} runs); profiled:`,
    );
    const summary = join(__dirname, 'profile-summary.mjs');
    const args = [summary, profileFile, process.env.TOP || '25', '--per', String(count)];
    require('node:child_process').execFileSync(process.execPath, args, { stdio: 'inherit' });
    if (!process.env.CPU_PROFILE) require('node:fs').rmSync(profileFile);
  } else {
    console.log(`${(report.total / count / 1024).toFixed(1)} KB allocated per trigger and run${sdk ? ', SDK registered' : ''} (sampled)`);
    for (const [where, bytes] of report.top) console.log(`${(bytes / count / 1024).toFixed(2).padStart(7)} KB  ${where}`);
  }
}

/** Preloaded into the server: counts between the parent's `start` and `stop`, answers over IPC. */
function child() {
  const kind = process.env.PER_REQUEST_KIND;
  let counting = false;
  const counts = new Map();
  let total = 0;
  let session;
  if (kind === 'promises') {
    const { createHook } = require('node:async_hooks');
    createHook({
      init(_id, type) {
        if (!counting || type !== 'PROMISE') return;
        total++;
        const frames = new Error().stack
          .split('\n')
          .slice(2)
          .map((l) => l.trim());
        const own = frames.find((l) => l.includes(`${root}/dist/`));
        const first = frames.find((l) => !l.includes('node:internal') && !l.includes('(<anonymous>)') && l !== 'at <anonymous>');
        const where = own ? `module: ${short(own)}` : first ? short(first) : '(no JS frame: an await or a thenable job)';
        counts.set(where, (counts.get(where) || 0) + 1);
      },
    }).enable();
  } else if (kind === 'statements') {
    // The Statement class is not exported: patch its prototype, taken from a throw-away statement.
    const Database = require(join(root, 'node_modules', 'better-sqlite3'));
    const scratch = new Database(':memory:');
    const proto = Object.getPrototypeOf(scratch.prepare('SELECT 1'));
    scratch.close();
    for (const name of ['run', 'get', 'all']) {
      const original = proto[name];
      proto[name] = function (...args) {
        if (!counting) return original.apply(this, args);
        const started = process.hrtime.bigint();
        try {
          return original.apply(this, args);
        } finally {
          const us = Number(process.hrtime.bigint() - started) / 1000;
          const sql = this.source.replace(/\s+/g, ' ').slice(0, 80);
          const entry = counts.get(sql) ?? { us: 0, calls: 0 };
          entry.us += us;
          entry.calls++;
          counts.set(sql, entry);
          total += us;
        }
      };
    }
  } else {
    const inspector = require('node:inspector');
    session = new inspector.Session();
    session.connect();
  }
  const short = (frame) => frame.replace(/^at /, '').replace(`${root}/`, '').replace('file://', '');
  let cpuAtStart;
  process.on('message', (m) => {
    if (m?.perRequest === 'start' && kind === 'cpu') {
      session.post('Profiler.enable', () =>
        session.post('Profiler.setSamplingInterval', { interval: 100 }, () =>
          session.post('Profiler.start', () => {
            cpuAtStart = process.cpuUsage();
            process.send({});
          }),
        ),
      );
      return;
    }
    if (m?.perRequest === 'stop' && kind === 'cpu') {
      const cpu = process.cpuUsage(cpuAtStart);
      session.post('Profiler.stop', (error, { profile }) => {
        if (error) throw error;
        require('node:fs').writeFileSync(m.profileFile, JSON.stringify(profile));
        process.send({ cpuUs: cpu.user + cpu.system, userUs: cpu.user });
      });
      return;
    }
    if (m?.perRequest === 'start') {
      if (kind !== 'heap') {
        counting = true;
        return process.send({});
      }
      const flags = { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
      session.post('HeapProfiler.startSampling', flags, () => process.send({}));
    }
    if (m?.perRequest === 'stop') {
      if (kind === 'promises') {
        counting = false;
        return process.send({ total, top: [...counts].sort((a, b) => b[1] - a[1]) });
      }
      if (kind === 'statements') {
        counting = false;
        return process.send({ total, top: [...counts].sort((a, b) => b[1].us - a[1].us) });
      }
      session.post('HeapProfiler.stopSampling', (error, result) => {
        if (error) throw error;
        const byPackage = new Map();
        let sum = 0;
        const walk = (node, owner) => {
          const url = node.callFrame.url;
          const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.includes(`${root}/dist/`) ? 'this library' : null);
          const by =
            process.env.HEAP_BY === 'function'
              ? `${node.callFrame.functionName || '(anon)'} ${short(url)}:${node.callFrame.lineNumber + 1} [${pkg ?? owner ?? ''}]`
              : (pkg ?? owner ?? (url.startsWith('node:') ? 'Node' : 'native'));
          if (node.selfSize) byPackage.set(by, (byPackage.get(by) || 0) + node.selfSize);
          sum += node.selfSize;
          for (const c of node.children) walk(c, pkg ?? owner);
        };
        walk(result.profile.head, null);
        process.send({ total: sum, top: [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP || 12)) });
      });
    }
  });
}
