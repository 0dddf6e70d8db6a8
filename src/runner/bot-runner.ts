/**
 * Where runs happen. `dispatch` must be safe to call twice for one id: the executor's conditional
 * state change turns the second call into a no-op.
 */
export abstract class BotRunner {
  abstract dispatch(invocationId: string): Promise<void>;
}
