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
