import { RUN_CANCELLED, RUN_INTERRUPTED, RUN_INTERRUPTED_TOO_OFTEN, RUN_TIMED_OUT } from '../errors/webhook-trigger.messages.js';
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
    return new RunStop('timed_out', { message: RUN_TIMED_OUT(ms), code: 'timeout' });
  }

  static cancelled(): RunStop {
    return new RunStop('cancelled', { message: RUN_CANCELLED, code: 'cancelled' });
  }

  /** An emitted output was invalid or went over `maxOutputBytes`: the run fails with that error. */
  static badOutput(error: InvocationError): RunStop {
    return new RunStop('failed', error);
  }

  static interrupted(): RunStop {
    return new RunStop('failed', { message: RUN_INTERRUPTED, code: 'interrupted' });
  }

  /** A `retryInterrupted` run that lost its process on each of its `attempts` (`maxRunAttempts`). */
  static interruptedTooOften(attempts: number): RunStop {
    return new RunStop('failed', { message: RUN_INTERRUPTED_TOO_OFTEN(attempts), code: 'interrupted_too_often' });
  }
}
