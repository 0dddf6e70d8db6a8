/**
 * Where runs happen. `dispatch` must be safe to call twice for one id: the executor's conditional
 * state change turns the second call into a no-op.
 */
export abstract class BotRunner {
  abstract dispatch(invocationId: string): Promise<void>;

  /**
   * True when dispatched runs outlive this process (a queue in Redis) and the runner finds `queued` runs
   * that never reached it by itself. Then startup does not re-dispatch every queued run one by one.
   */
  get durable(): boolean {
    return false;
  }
}
