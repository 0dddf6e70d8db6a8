import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebhookTriggerModule, WebhookTriggersAdmin } from '../src/index.js';
import { SlowBot } from './fixtures/bots.js';

const dir = mkdtempSync(join(tmpdir(), 'webhook-recovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(file: string): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: file }, maxConcurrentRuns: 1, shutdownGraceMs: 0 })],
    providers: [SlowBot],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

describe('runs accepted but not started when the app stopped', () => {
  it('are run by the next start on the same database, charged once', async () => {
    const file = join(dir, 'recovery.sqlite');
    const first = await start(file);
    const admin1 = first.get(WebhookTriggersAdmin);
    await admin1.setCredits('acct', 10);
    const trigger = await admin1.createTrigger('slow', { name: 'backlog' });
    const url1 = await first.getUrl();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url1}/webhooks/${trigger.id}/trigger`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': trigger.key! },
        body: JSON.stringify({ ms: 1500 }),
      });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { invocation: { id: string } }).invocation.id);
    }
    // One slot: the first run is in flight, two wait. Stop now.
    await first.close();

    const second = await start(file);
    try {
      const admin2 = second.get(WebhookTriggersAdmin);
      const url2 = await second.getUrl();
      const before = await admin2.listInvocations('slow');
      expect(before.find((i) => i.id === ids[0])).toMatchObject({ status: 'failed', error: { code: 'interrupted' } }); // no grace: aborted by the shutdown
      const sync = await fetch(`${url2}/webhooks/${trigger.id}/trigger/invocation/${ids[1]}/sync`, { headers: { 'x-key': trigger.key! } });
      expect(sync.status).toBe(200);
      expect(await sync.json()).toEqual({ success: true, outputs: [{ title: 'slept', message: '1500' }] });
      expect(await admin2.getCredits('acct')).toEqual({ id: 'acct', credits: 7 });
    } finally {
      await second.close();
    }
  }, 30_000);
});
