// What the orchestrator (run.ts) and the fleet's processes (node.ts) agree on: bots, accounts, limits, timings.

/** The bots of node.ts: account, credits per run, how many triggers the seed creates and how many of them have a callback. */
export const SOAK_BOTS = {
  echo: { id: 'echo', account: 'alpha', credits: 1, triggers: 3, callbacks: 1 },
  /** Only the orchestrator's recovery probe calls it: its own account, so the load's limits never refuse it. */
  probe: { id: 'probe', account: 'gamma', credits: 1, triggers: 1, callbacks: 0 },
  fail: { id: 'fail', account: 'alpha', credits: 2, triggers: 1, callbacks: 1 },
  retry: { id: 'retry', account: 'alpha', credits: 3, triggers: 2, callbacks: 1 },
  timeout: { id: 'timeout', account: 'beta', credits: 1, triggers: 1, callbacks: 0 },
  long: { id: 'long', account: 'beta', credits: 5, triggers: 2, callbacks: 1 },
} as const;

export type SoakBotId = keyof typeof SOAK_BOTS;

export const SOAK_LIMITS = {
  /** Accepted triggers per trigger per second (`rateLimits.perTrigger`). */
  perTrigger: 10,
  /** Accepted triggers per account per minute (`rateLimits.perAccount`). */
  perAccount: 420,
  /** Each account's credits at the start. */
  credits: { alpha: 1_000_000, beta: 1_000_000, gamma: 1_000_000 } as Record<string, number>,
};

export const SOAK_TIMINGS = {
  /** Short, so a SIGSTOPped worker outlives its lease within seconds (renewed every third of it). */
  runLeaseMs: 3_000,
  shutdownGraceMs: 1_500,
  syncTimeoutMs: 15_000,
  /** The `timeout` bot's own time limit (it sleeps 4× that). */
  timeoutBotLimitMs: 300,
  callbackRetryScheduleMs: [0, 500, 1_000, 2_000, 4_000, 8_000, 15_000],
};

export interface SeededTrigger {
  id: string;
  key: string;
  botId: SoakBotId;
  account: string;
  /** The callback's `whsec_…` secret; null when the trigger has no callback. */
  callbackSecret: string | null;
}

export interface SeedResult {
  credits: Record<string, number>;
  triggers: SeededTrigger[];
}
