import { Logger } from '@nestjs/common';
import { createWebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { HistoryRetention } from './history-retention.js';
import { ShutdownState } from './shutdown.state.js';

describe('HistoryRetention', () => {
  const failingStore = () => {
    const f = createWebhookFakes({ historyRetentionDays: 30 });
    jest.spyOn(f.invocations, 'deleteFinishedBefore').mockRejectedValue(new Error('The database connection is not open'));
    return f;
  };

  afterEach(() => jest.restoreAllMocks());

  it('logs a failed sweep as an error while the app runs', async () => {
    const f = failingStore();
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    await expect(new HistoryRetention(f.invocations, new ShutdownState(), f.options).sweep()).resolves.toBe(0);
    expect(error).toHaveBeenCalledWith('History retention failed; retrying in an hour', expect.stringContaining('not open'));
  });

  it('says nothing when the sweep was cut off by the app shutting down (the database closed under it)', async () => {
    const f = failingStore();
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const shutdown = new ShutdownState();
    shutdown.begin();
    await expect(new HistoryRetention(f.invocations, shutdown, f.options).sweep()).resolves.toBe(0);
    expect(error).not.toHaveBeenCalled();
  });
});
