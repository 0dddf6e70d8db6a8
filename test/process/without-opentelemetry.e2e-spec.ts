/**
 * The module without its optional peer `@opentelemetry/api` (docs/observability.md): a host app as a real node
 * process (test/fixtures/untraced-host.cjs) in which every `@opentelemetry/*` package is refused as if not installed
 * (test/fixtures/block-opentelemetry.cjs) starts, and its bot runs through the trigger and sync endpoints, a
 * caller's traceparent changing nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { request, triggerBot, until } from '../helpers/http.js';
import { callerTrace } from '../helpers/tracing.js';

jest.setTimeout(60_000);

const HOST = join(__dirname, '../fixtures/untraced-host.cjs');
const BLOCK_OPENTELEMETRY = join(__dirname, '../fixtures/block-opentelemetry.cjs');

describe('a host without @opentelemetry/api installed (real process)', () => {
  let host: ChildProcess;
  let output = '';

  beforeAll(async () => {
    host = spawn(process.execPath, ['-r', BLOCK_OPENTELEMETRY, HOST], { stdio: ['ignore', 'pipe', 'pipe'] });
    host.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    host.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    await until(() => output.includes('"url"') || host.exitCode !== null, 30_000, 'the host process');
  });
  afterAll(async () => {
    if (host && host.exitCode === null) {
      const exited = new Promise((resolve) => host.once('exit', resolve));
      host.kill('SIGTERM');
      await exited;
    }
  });

  it('starts, asked for the API and was refused, and runs a bot from trigger to sync', async () => {
    const line = output.split('\n').find((l) => l.startsWith('{"url"'));
    if (!line) throw new Error(`The host did not start:\n${output}`);
    const { url, key } = JSON.parse(line) as { url: string; key: string };
    expect(output).toContain('[block-opentelemetry] refused @opentelemetry/api');
    const started = await triggerBot({ url, key }, { text: 'untraced' }, { headers: { traceparent: callerTrace().traceparent } });
    expect(started.status).toBe(200);
    const sync = await request(`${url}/invocation/${started.body.invocation.id}/sync`, { headers: { 'x-key': key } });
    expect(sync.status).toBe(200);
    expect(sync.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'untraced' }] });
  });
});
