import type { BotOutput } from '../bots/bot.types.js';

/**
 * Where a run is in its life: `queued → running → succeeded | failed | cancelled | timed_out`, and
 * `queued → cancelled`. Terminal states never change.
 */
export const INVOCATION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];
/** The states a run never leaves. */
export const TERMINAL_STATUSES: ReadonlySet<InvocationStatus> = new Set(
  INVOCATION_STATUSES.filter((s) => s !== 'queued' && s !== 'running'),
);

export interface TriggerRecord {
  id: string;
  botId: string;
  /** The account charged for runs started through this trigger. */
  accountId: string;
  name: string;
  type: 'webhook';
  /** SHA-256 of the key, hex. */
  keyHash: string;
  /** AES-256-GCM ciphertext of the key when the host configured `keySecret`. */
  keyCiphertext: string | null;
  createdAt: Date;
}

export interface InvocationError {
  message: string;
  /** Why the run ended without success, when it was not the bot's own error: `timeout`, `cancelled`, `interrupted`, `invalid_outputs`, `outputs_too_large`, `bot_not_registered`. */
  code?: string;
}

export interface InvocationRecord {
  id: string;
  triggerId: string;
  botId: string;
  accountId: string;
  status: InvocationStatus;
  inputs: Record<string, unknown>;
  outputs: BotOutput[] | null;
  error: InvocationError | null;
  /** Credits charged when the run was accepted. */
  credits: number;
  idempotencyKey: string | null;
  /** SHA-256 of the request body, to tell a repeat from a different request under the same idempotency key. */
  requestHash: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The process that claimed it (`InvocationExecutor.owner`), while it is `running`. */
  owner?: string | null;
  /** Set by history lists when the outputs were too long to list (they are `null` there; read the run by id). */
  outputsTruncated?: boolean;
}

export type NewInvocation = Omit<InvocationRecord, 'status' | 'outputs' | 'error' | 'startedAt' | 'finishedAt' | 'owner'>;

/** Fields written together with a state change. */
export interface InvocationTransition {
  startedAt?: Date | null;
  finishedAt?: Date;
  outputs?: BotOutput[] | null;
  error?: InvocationError | null;
}
