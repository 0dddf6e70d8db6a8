/**
 * A check of an outside service a part relies on (e.g. a PING to Redis), which the health probes
 * (`WebhookTriggerProbes`) run with a short timeout: the parts declare them through their contracts'
 * `serviceChecks()`. Imports nothing, so every contract may name it.
 */
export interface ServiceCheck {
  /** The service, as the health details name it, e.g. `'redis'`: the checks of one service make one entry. */
  readonly service: string;
  /** The part that checks, named in the details when it fails, e.g. `'BullMqBotRunner'`. */
  readonly part: string;
  /** Resolves when the service answered; rejects (or never settles) when it did not. */
  ping(): Promise<unknown>;
}
