/**
 * The sample app's `GET /metrics` (sample-app/src/telemetry.ts registers the OpenTelemetry SDK with the
 * Prometheus exporter's reader): scraped from the real started process after a run, in the Prometheus text
 * format, with the module's metrics under their documented names.
 */
import { expectError, request, syncInvocation, triggerBot } from '../helpers/http.js';
import { freePort, killSampleApps, startSampleApp, type SampleAppProcess } from '../helpers/sample-app-process.js';

jest.setTimeout(30_000);

/** `name{labels} value` lines of a Prometheus text answer, comments left out. */
function samples(text: string): Array<{ name: string; labels: string; value: number }> {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
      return { name: match[1], labels: match[2] ?? '', value: Number(match[3]) };
    });
}

describe('sample app: GET /metrics (real process)', () => {
  let app: SampleAppProcess;
  beforeAll(async () => {
    app = await startSampleApp({ PORT: String(await freePort()), SQLITE_PATH: ':memory:', ADMIN_TOKEN: 'sample-metrics-admin-token-0c2b' });
  }, 60_000);
  afterAll(() => killSampleApps());

  it('serves the documented metrics in the Prometheus text format after a run, without signing in', async () => {
    const out = app.output();
    const demo = { url: /Echo trigger URL: (\S+)/.exec(out)![1], key: /Echo trigger key: (\S+)/.exec(out)![1] };
    const started = await triggerBot(demo, { text: 'hello' });
    expect(started.status).toBe(200);
    expect((await syncInvocation(demo, started.body.invocation.id)).status).toBe(200);
    expectError(await triggerBot(demo, { text: 'x' }, { key: 'whk_wrong' }), 401);

    const res = await request(`${app.base}/metrics`);
    expect(res.status).toBe(200);
    // Prometheus's text format, version 0.0.4; Express 4 (NestJS 11) adds a charset parameter, which a scrape accepts.
    expect(res.headers.get('content-type')).toMatch(/^text\/plain;/);
    expect(res.headers.get('content-type')).toMatch(/; version=0\.0\.4(;|$)/);
    const all = samples(res.text);
    const value = (name: string, ...labels: string[]) =>
      all.filter((s) => s.name === name && labels.every((l) => s.labels.includes(l))).reduce((sum, s) => sum + s.value, 0);

    expect(res.text).toContain('# TYPE webhook_trigger_requests_total counter');
    expect(res.text).toContain('# TYPE webhook_trigger_run_duration_seconds histogram');
    expect(value('webhook_trigger_requests_total', 'operation="trigger"', 'status_code="200"')).toBe(1);
    expect(value('webhook_trigger_requests_total', 'operation="trigger"', 'status_code="401"')).toBe(1);
    expect(value('webhook_trigger_requests_total', 'operation="sync"', 'status_code="200"')).toBe(1);
    expect(value('webhook_trigger_runs_finished_total', 'bot="echo"', 'status="succeeded"')).toBe(1);
    expect(value('webhook_trigger_run_duration_seconds_count', 'bot="echo"', 'status="succeeded"')).toBe(1);
    expect(value('webhook_trigger_run_duration_seconds_bucket', 'bot="echo"', 'le="+Inf"')).toBe(1);
    expect(value('webhook_trigger_queue_wait_seconds_count', 'bot="echo"')).toBe(1);
    expect(value('webhook_trigger_credits_charged_total')).toBe(1);
    for (const gauge of ['backlog_runs', 'running_runs', 'sync_waiters', 'event_streams']) {
      expect(all.filter((s) => s.name === `webhook_trigger_${gauge}`)).toEqual([expect.objectContaining({ value: 0 })]);
    }
    // The seconds buckets of the docs (RUN_SECONDS_BUCKETS), not the SDK's millisecond-minded defaults.
    expect(res.text).toContain('le="900"');
    expect(all.some((s) => s.labels.includes('account='))).toBe(false);
  });
});
