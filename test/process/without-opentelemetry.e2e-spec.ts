/**
 * The module without its optional peer `@opentelemetry/api` (docs/observability.md): the sample app as a real
 * process, every `@opentelemetry/*` package refused as if not installed (test/fixtures/block-opentelemetry.cjs),
 * starts, and its echo bot runs through the trigger and sync endpoints, a caller's traceparent changing nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, triggerBot } from '../helpers/http.js';
import { freePort, killSampleApps, startSampleApp, type SampleAppProcess } from '../helpers/sample-app-process.js';
import { callerTrace } from '../helpers/tracing.js';

jest.setTimeout(60_000);

const BLOCK_OPENTELEMETRY = join(__dirname, '../fixtures/block-opentelemetry.cjs');

describe('the sample app without @opentelemetry/api installed (real process)', () => {
  let dir: string;
  let app: SampleAppProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'without-otel-'));
    app = await startSampleApp({
      PORT: String(await freePort()),
      SQLITE_PATH: join(dir, 'sample.sqlite'),
      ADMIN_TOKEN: 'without-otel-admin-token-0c9e',
      NODE_OPTIONS: `--require ${BLOCK_OPENTELEMETRY}`,
    });
  });
  afterAll(async () => {
    await killSampleApps();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('starts, asked for the API and was refused, and runs a bot from trigger to sync', async () => {
    expect(app.output()).toContain('[block-opentelemetry] refused @opentelemetry/api');
    const url = /Echo trigger URL: (\S+)/.exec(app.output())?.[1];
    const key = /Echo trigger key: (\S+)/.exec(app.output())?.[1];
    expect(url && key).toBeTruthy();
    const started = await triggerBot(
      { url: url!, key: key! },
      { text: 'untraced' },
      { headers: { traceparent: callerTrace().traceparent } },
    );
    expect(started.status).toBe(200);
    const sync = await request(`${url}/invocation/${started.body.invocation.id}/sync`, { headers: { 'x-key': key! } });
    expect(sync.status).toBe(200);
    expect(sync.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'untraced' }] });
  });
});
