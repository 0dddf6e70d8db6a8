import type { LoggerService } from '@nestjs/common';

/** The JSON object POSTed to the trigger: any properties, defined by the bot. */
export type BotInputs = Record<string, unknown>;

/** One element of the sync response's `outputs`. */
export interface BotOutput {
  title: string;
  message: string;
}

/** What a bot's `main()` gets besides its inputs. */
export interface BotContext {
  invocationId: string;
  triggerId: string;
  botId: string;
  accountId: string;
  /** Fires when the run must stop: cancelled, timed out or the process shuts down. Pass it on to I/O. */
  signal: AbortSignal;
  /** A logger whose context names the bot and the invocation. Never log trigger keys. */
  logger: LoggerService;
  /**
   * Publishes one output now, before `main()` returns: it is stored at once (a crash keeps it) and sent
   * to the run's event streams; the run's outputs are the emitted ones followed by the returned ones.
   * Checked like returned outputs and counted in the same `maxOutputBytes`: an invalid or oversized one
   * fails the run (`invalid_outputs`, `outputs_too_large`; the signal fires). Resolves `true` once stored,
   * `false` when it was not (the run had ended: cancelled, timed out, failed). Never rejects.
   */
  emit(output: BotOutput): Promise<boolean>;
}

/** Options of `@WebhookBot()`. */
export interface WebhookBotOptions {
  /** Stable id, unique in the app; triggers and history refer to it. Letters, digits, `.`, `_`, `-`. */
  id: string;
  /** Display name. @default the id */
  name?: string;
  /** Credits charged to the owning account per accepted run (0 allowed). @default 1 */
  credits?: number;
  /** Account that owns the bot and pays for its runs. @default the module's `defaultAccountId` */
  accountId?: string;
  /** Longest a run may take; then its signal fires and it ends `timed_out`. @default the module's `botTimeoutMs` */
  timeoutMs?: number;
  /**
   * What happens to a run that was in `main()` when its process died: by default it is stored `failed`
   * ("interrupted") and never runs twice. With `true` it runs again (at-least-once): choose it only
   * when running the bot twice for one request is safe. @default false
   */
  retryInterrupted?: boolean;
}
