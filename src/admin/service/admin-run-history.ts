import { Inject, Injectable } from '@nestjs/common';
import type { BotInputs } from '../../bots/bot.types.js';
import { WebhookBotRegistry } from '../../bots/webhook-bot.registry.js';
import { ClusterBus, type RunChange } from '../../cluster/cluster-bus.js';
import { InvalidRequestError, WebhookAdminConflictError, WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD, BODY_TOO_LARGE, REPLAY_TRIGGER_DELETED } from '../../errors/webhook-trigger.messages.js';
import { parseTriggerBody } from '../../http/webhook-body.parser.js';
import { InvocationService } from '../../invocations/invocation.service.js';
import { INVOCATION_ID_PATTERN, PLAIN_TEXT_255, TRIGGER_ID_PATTERN } from '../../keys/ids.js';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { type HistoryQuery, InvocationRepository } from '../../persistence/invocation.repository.js';
import { INVOCATION_STATUSES, type InvocationRecord } from '../../persistence/records.js';
import { TriggerRepository } from '../../persistence/trigger.repository.js';
import {
  type HistoryFilter,
  type InvocationDetail,
  type InvocationView,
  HISTORY_PAGE_SIZE,
  LISTED_ERROR_MAX,
  LISTED_INPUTS_MAX,
  LISTED_OUTPUTS_MAX,
  type TimelineStep,
} from '../admin-views.js';
import { AdminAudit } from '../audit/admin-audit.js';

/** Most runs one history page holds. */
const PAGE_MAX = 1000;

/** A bot's runs for the admin: history pages, one run, cancel, replay, live changes. Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminRunHistory {
  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly invocations: InvocationRepository,
    private readonly service: InvocationService,
    private readonly bus: ClusterBus,
    private readonly audit: AdminAudit,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async listInvocations(botId: string, filter: HistoryFilter = {}): Promise<InvocationView[]> {
    if (!this.registry.get(botId)) return [];
    const query = await this.historyQuery(botId, filter);
    const [rows, triggers] = await Promise.all([this.invocations.listByBot(botId, query), this.triggers.listByBot(botId)]);
    const names = new Map(triggers.map((t) => [t.id, t.name]));
    return rows.map((row) => view(row, names.get(row.triggerId) ?? null));
  }

  /** The filter checked field by field (each refusal names the query parameter the admin API reads it from). */
  private async historyQuery(botId: string, filter: HistoryFilter): Promise<HistoryQuery> {
    const bad = (field: string, problem: string) => new WebhookAdminInputError(BAD_ADMIN_FIELD(field, problem));
    // A bare number was the limit in an older signature: refused rather than read as "no filter".
    if (typeof filter !== 'object' || filter === null) throw bad('filter', 'an object such as { limit: 50 }');
    const limit = filter.limit ?? HISTORY_PAGE_SIZE;
    if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_MAX) throw bad('limit', `a whole number from 1 to ${PAGE_MAX}`);
    if (filter.status !== undefined && !INVOCATION_STATUSES.includes(filter.status)) {
      throw bad('status', `one of ${INVOCATION_STATUSES.join(', ')}`);
    }
    for (const field of ['from', 'to'] as const) {
      const value = filter[field];
      if (value !== undefined && !(value instanceof Date && Number.isFinite(value.getTime()))) throw bad(field, 'an ISO 8601 time');
    }
    if (filter.triggerId !== undefined && !TRIGGER_ID_PATTERN.test(filter.triggerId)) throw bad('triggerId', 'a trigger id');
    if (filter.search !== undefined && !PLAIN_TEXT_255.test(filter.search)) throw bad('q', 'an invocation id or an idempotency key');
    const query: HistoryQuery = { limit, outputsUpTo: LISTED_OUTPUTS_MAX, inputsUpTo: LISTED_INPUTS_MAX, errorUpTo: LISTED_ERROR_MAX };
    if (filter.status !== undefined) query.status = filter.status;
    if (filter.triggerId !== undefined) query.triggerId = filter.triggerId;
    if (filter.from !== undefined) query.createdFrom = filter.from;
    if (filter.to !== undefined) query.createdBefore = filter.to;
    if (filter.search !== undefined) query.search = filter.search;
    if (filter.before !== undefined) {
      const cursor = INVOCATION_ID_PATTERN.test(filter.before) ? await this.invocations.findById(filter.before) : null;
      if (!cursor || cursor.botId !== botId) throw bad('before', "the id of one of this bot's runs (the last run of the previous page)");
      query.after = { createdAt: cursor.createdAt, id: cursor.id };
    }
    return query;
  }

  async getInvocation(invocationId: string): Promise<InvocationView | null> {
    const row = await this.find(invocationId);
    return row ? view(row, null) : null;
  }

  async getInvocationDetail(invocationId: string, { showInputs = false } = {}): Promise<InvocationDetail | null> {
    const row = await this.find(invocationId);
    return row ? this.detail(row, showInputs) : null;
  }

  async cancelInvocation(invocationId: string, { showInputs = false } = {}): Promise<InvocationDetail | null> {
    if (!INVOCATION_ID_PATTERN.test(invocationId)) return null;
    const row = await this.service.cancelById(invocationId);
    if (row) await this.audit.runCancelled(row);
    return row ? this.detail(row, showInputs) : null;
  }

  async replayInvocation(invocationId: string, inputs?: unknown): Promise<{ id: string } | null> {
    const row = await this.find(invocationId);
    if (!row) return null;
    const replayInputs = inputs === undefined ? row.inputs : this.checkInputs(inputs);
    const trigger = await this.triggers.findActive(row.triggerId);
    if (!trigger) throw new WebhookAdminConflictError(REPLAY_TRIGGER_DELETED(row.triggerId));
    const { id } = await this.service.start(trigger, replayInputs);
    await this.audit.runReplayed(row, id);
    return { id };
  }

  watchRuns(botId: string | undefined, listener: (change: RunChange) => void): () => void {
    return this.bus.watchChanges((change) => {
      // An emitted output is not a state change; the history's rows change with states only.
      if (change.kind === 'output') return;
      if (botId === undefined || change.botId === botId) listener(change);
    });
  }

  /** An impossible id reads as unknown, never reaching the database. */
  private async find(invocationId: string): Promise<InvocationRecord | null> {
    return INVOCATION_ID_PATTERN.test(invocationId) ? this.invocations.findById(invocationId) : null;
  }

  /** The rules of a trigger body, for inputs that came through the host's own JSON parser. */
  private checkInputs(inputs: unknown): BotInputs {
    let text: string | undefined;
    try {
      text = JSON.stringify(inputs);
    } catch {
      text = undefined; // cycles cannot come from JSON; a stack overflow from absurd depth can
    }
    if (text === undefined) throw new WebhookAdminInputError(BAD_ADMIN_FIELD('inputs', 'a JSON object'));
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length > this.options.maxBodyBytes) throw new WebhookAdminInputError(BODY_TOO_LARGE(this.options.maxBodyBytes));
    try {
      return parseTriggerBody(bytes, this.options.maxJsonDepth);
    } catch (error) {
      if (error instanceof InvalidRequestError) throw new WebhookAdminInputError(error.message);
      throw error;
    }
  }

  private async detail(row: InvocationRecord, showInputs: boolean): Promise<InvocationDetail> {
    const trigger = await this.triggers.findActive(row.triggerId);
    const timeline: TimelineStep[] = [{ status: 'queued', at: row.createdAt }];
    if (row.startedAt) timeline.push({ status: 'running', at: row.startedAt });
    if (row.finishedAt) timeline.push({ status: row.status, at: row.finishedAt });
    const detail: InvocationDetail = {
      ...view(row, trigger?.name ?? null),
      accountId: row.accountId,
      inputsHidden: !showInputs,
      trigger: { id: row.triggerId, name: trigger?.name ?? null, deleted: !trigger },
      timeline,
    };
    if (showInputs) detail.inputs = row.inputs;
    return detail;
  }
}

/** The one place a run record becomes a view (a detail adds to it). */
function view(row: InvocationRecord, triggerName: string | null): InvocationView {
  const { id, triggerId, botId, status, credits, createdAt, startedAt, finishedAt, outputs, error, idempotencyKey } = row;
  return {
    id,
    triggerId,
    botId,
    status,
    credits,
    createdAt,
    startedAt,
    finishedAt,
    durationMs: startedAt && finishedAt ? finishedAt.getTime() - startedAt.getTime() : null,
    outputs,
    outputsTruncated: row.outputsTruncated === true,
    error,
    errorTruncated: row.errorTruncated === true,
    triggerName,
    idempotencyKey,
  };
}
