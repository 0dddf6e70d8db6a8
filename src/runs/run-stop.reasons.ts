import type { InvocationError, InvocationStatus } from '../persistence/records.js';

/** Why a run's AbortSignal fired; decides the state the run ends in. */
export class RunStop extends Error {
  private constructor(
    readonly status: InvocationStatus,
    readonly error: InvocationError,
  ) {
    super(error.message);
  }

  static timeout(ms: number): RunStop {
    return new RunStop('timed_out', { message: `The bot did not finish within ${ms} ms`, code: 'timeout' });
  }

  static cancelled(): RunStop {
    return new RunStop('cancelled', { message: 'The run was cancelled', code: 'cancelled' });
  }

  static interrupted(): RunStop {
    return new RunStop('failed', { message: 'The run was interrupted: the application stopped before it finished', code: 'interrupted' });
  }
}
