/** Domain errors of the invocations layer; the HTTP layer maps them to status codes. */
export class NotEnoughCreditsError extends Error {
  constructor(readonly accountId: string, readonly cost: number) {
    super(`Account ${accountId} cannot pay ${cost} credit(s)`);
  }
}

export class BotNotRegisteredError extends Error {
  constructor(readonly botId: string) {
    super(`Bot ${botId} is not registered`);
  }
}

/** The idempotency key was already used on this trigger for a request with a different body. */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('Idempotency key reused with a different request body');
  }
}

/** The run already finished, so it cannot be cancelled. */
export class InvocationAlreadyFinishedError extends Error {
  constructor(readonly invocationId: string, readonly status: string) {
    super(`Invocation ${invocationId} already finished (${status})`);
  }
}

/** The application is shutting down and accepts no new runs. */
export class ShuttingDownError extends Error {
  constructor() {
    super('The application is shutting down');
  }
}
