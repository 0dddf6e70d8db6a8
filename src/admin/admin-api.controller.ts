import { Body, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Req, Sse, type MessageEvent } from '@nestjs/common';
import type { Socket } from 'node:net';
import type { Observable } from 'rxjs';
import { WebhookAdminInputError, WebhookAdminNotFoundError } from '../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD, UNKNOWN_BOT, UNKNOWN_INVOCATION_ID, UNKNOWN_TRIGGER } from '../errors/webhook-trigger.messages.js';
import type { InvocationStatus } from '../persistence/records.js';
import { AdminBackend } from './admin-backend.js';
import { AdminEventStreams } from './admin-event-streams.js';
import { requestOrigin } from './request-origin.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import type {
  AdminAccount,
  AdminBot,
  AdminCallback,
  AdminDelivery,
  AdminRun,
  CreatedTrigger,
  ListedRun,
  ListedTrigger,
  Redelivery,
  ReplayedRun,
  RotatedKey,
  ViewedTrigger,
} from './admin-api-answers.js';
import type { BotSummary, CallbackView, HistoryFilter, TriggerWithKey } from './admin-views.js';

type QueryValue = string | string[] | undefined;

/**
 * The admin JSON API (`<path>/api`), a thin HTTP layer over `WebhookTriggersAdmin`. Mounted by
 * `WebhookTriggerAdminModule` under its path with the host's guards; left out of OpenAPI.
 */
export class AdminApiController {
  constructor(
    private readonly backend: AdminBackend,
    private readonly streams: AdminEventStreams,
    @Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings,
  ) {}

  @Get('bots')
  async listBots(): Promise<AdminBot[]> {
    return (await this.backend.admin.listBotSummaries()).map(botJson);
  }

  @Get('bots/:botId')
  async getBot(@Param('botId') botId: string): Promise<AdminBot> {
    return botJson(found(await this.backend.admin.getBotSummary(botId), UNKNOWN_BOT(botId)));
  }

  @Get('bots/:botId/triggers')
  async listTriggers(@Param('botId') botId: string, @Req() request: unknown): Promise<ListedTrigger[]> {
    this.requireBot(botId);
    return (await this.backend.admin.listTriggers(botId)).map(({ id, name, type, createdAt, lastUsedAt }) => ({
      id,
      name,
      type,
      url: this.urlFor(id, request),
      createdAt,
      lastUsedAt,
    }));
  }

  @Post('bots/:botId/triggers')
  @HttpCode(201)
  async createTrigger(@Param('botId') botId: string, @Body() body: unknown, @Req() request: unknown): Promise<CreatedTrigger> {
    this.requireBot(botId);
    const { name, type } = requireObject(body);
    const created = await this.backend.admin.createTrigger(botId, { name: name as string, type: type as string | undefined });
    return withKey({ ...created, url: this.urlFor(created.id, request) });
  }

  @Get('triggers/:triggerId')
  async viewTrigger(@Param('triggerId') triggerId: string, @Req() request: unknown): Promise<ViewedTrigger> {
    const viewed = found(await this.backend.admin.viewTrigger(triggerId), UNKNOWN_TRIGGER(triggerId));
    const trigger = withKey({ ...viewed, url: this.urlFor(viewed.id, request) });
    // The trigger's view shows its callback: with it here, the screens never ask for one that is not there (a 404).
    const callback = await this.backend.admin.getCallback(triggerId);
    return { ...trigger, callback: callback ? callbackJson(callback) : null };
  }

  @Post('triggers/:triggerId/rotate-key')
  @HttpCode(200)
  async rotateKey(@Param('triggerId') triggerId: string, @Req() request: unknown): Promise<RotatedKey> {
    const { id, key } = found(await this.backend.admin.rotateKey(triggerId), UNKNOWN_TRIGGER(triggerId));
    return { id, url: this.urlFor(id, request), key };
  }

  /** The trigger's URL as the viewer reaches this app (`publicBaseUrl` still wins when set). */
  private urlFor(triggerId: string, request: unknown): string {
    return this.backend.admin.triggerUrl(triggerId, requestOrigin(request));
  }

  @Delete('triggers/:triggerId')
  @HttpCode(204)
  async deleteTrigger(@Param('triggerId') triggerId: string): Promise<void> {
    if (!(await this.backend.admin.deleteTrigger(triggerId))) throw new WebhookAdminNotFoundError(UNKNOWN_TRIGGER(triggerId));
  }

  @Get('triggers/:triggerId/callback')
  async getCallback(@Param('triggerId') triggerId: string): Promise<AdminCallback> {
    return callbackJson(found(await this.backend.admin.getCallback(triggerId), NO_CALLBACK(triggerId)));
  }

  @Put('triggers/:triggerId/callback')
  async setCallback(@Param('triggerId') triggerId: string, @Body() body: unknown): Promise<AdminCallback> {
    const { url, events } = requireObject(body);
    const set = await this.backend.admin.setCallback(triggerId, { url: url as string, events: events as string[] | undefined });
    return callbackJson(found(set, UNKNOWN_TRIGGER(triggerId)));
  }

  @Delete('triggers/:triggerId/callback')
  @HttpCode(204)
  async deleteCallback(@Param('triggerId') triggerId: string): Promise<void> {
    if (!(await this.backend.admin.deleteCallback(triggerId))) throw new WebhookAdminNotFoundError(NO_CALLBACK(triggerId));
  }

  @Post('triggers/:triggerId/callback/rotate-secret')
  @HttpCode(200)
  async rotateCallbackSecret(@Param('triggerId') triggerId: string): Promise<AdminCallback> {
    return callbackJson(found(await this.backend.admin.rotateCallbackSecret(triggerId), NO_CALLBACK(triggerId)));
  }

  @Get('triggers/:triggerId/deliveries')
  async listDeliveries(@Param('triggerId') triggerId: string): Promise<AdminDelivery[]> {
    return found(await this.backend.admin.listDeliveries(triggerId), UNKNOWN_TRIGGER(triggerId));
  }

  @Get('invocations/:invocationId/deliveries')
  async listInvocationDeliveries(@Param('invocationId') id: string): Promise<AdminDelivery[]> {
    return this.backend.admin.listInvocationDeliveries(id);
  }

  @Post('deliveries/:deliveryId/redeliver')
  @HttpCode(202)
  async redeliver(@Param('deliveryId') deliveryId: string): Promise<Redelivery> {
    if (!(await this.backend.admin.redeliver(deliveryId))) throw new WebhookAdminNotFoundError(`No delivery ${deliveryId.slice(0, 200)}`);
    return { id: deliveryId, status: 'pending' };
  }

  @Get('bots/:botId/invocations')
  async listInvocations(@Param('botId') botId: string, @Query() query: Record<string, QueryValue>): Promise<ListedRun[]> {
    this.requireBot(botId);
    return (await this.backend.admin.listInvocations(botId, historyFilter(query))).map((run) => {
      const { botId: _bot, ...listed } = run;
      return listed;
    });
  }

  @Get('invocations/:invocationId')
  async getInvocation(@Param('invocationId') id: string): Promise<AdminRun> {
    return found(await this.backend.admin.getInvocationDetail(id, this.settings), UNKNOWN_INVOCATION_ID(id));
  }

  @Post('invocations/:invocationId/cancel')
  @HttpCode(200)
  async cancelInvocation(@Param('invocationId') id: string): Promise<AdminRun> {
    return found(await this.backend.admin.cancelInvocation(id, this.settings), UNKNOWN_INVOCATION_ID(id));
  }

  @Post('invocations/:invocationId/replay')
  @HttpCode(201)
  async replayInvocation(@Param('invocationId') id: string, @Body() body: unknown): Promise<ReplayedRun> {
    const { inputs } = body === undefined || body === null || body === '' ? {} : requireObject(body);
    return found(await this.backend.admin.replayInvocation(id, inputs), UNKNOWN_INVOCATION_ID(id));
  }

  @Get('accounts/:accountId')
  async getAccount(@Param('accountId') accountId: string): Promise<AdminAccount> {
    return found(await this.backend.admin.getCredits(accountId), `No account ${accountId.slice(0, 200)}`);
  }

  @Put('accounts/:accountId/credits')
  async setCredits(@Param('accountId') accountId: string, @Body() body: unknown): Promise<AdminAccount> {
    const { credits } = requireObject(body);
    return this.backend.admin.setCredits(accountId, credits as number);
  }

  @Sse('events')
  events(@Req() request: { socket?: Socket; raw?: { socket?: Socket } }, @Query('botId') botId?: QueryValue): Observable<MessageEvent> {
    if (botId !== undefined) this.requireBot(single(botId, 'botId'));
    return this.streams.stream(this.backend.admin, botId as string | undefined, request.raw?.socket ?? request.socket);
  }

  private requireBot(botId: string): void {
    if (!this.backend.admin.listBots().some((b) => b.id === botId)) throw new WebhookAdminNotFoundError(UNKNOWN_BOT(botId.slice(0, 200)));
  }
}

function botJson({ id, name, accountId, credits, accountCredits, triggers, runsLast24h }: BotSummary): AdminBot {
  return { id, name, accountId, creditsPerRun: credits, accountCredits, triggers, runsLast24h };
}

function withKey({ id, name, type, botId, url, key, createdAt }: TriggerWithKey): CreatedTrigger {
  return { id, name, type, botId, url, key, createdAt };
}

/** 404 for a trigger without a callback (or an unknown trigger). */
const NO_CALLBACK = (triggerId: string) => `No callback on trigger ${triggerId.slice(0, 200)}`;

function callbackJson({ url, events, secret, enabled, consecutiveFailures, disabledReason }: CallbackView): AdminCallback {
  return { url, events, secret, enabled, consecutiveFailures, disabledReason };
}

function found<T>(value: T | null, message: string): T {
  if (value === null) throw new WebhookAdminNotFoundError(message);
  return value;
}

function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new WebhookAdminInputError('Send a JSON object with Content-Type: application/json');
  }
  return body as Record<string, unknown>;
}

function single(value: QueryValue, field: string): string {
  if (typeof value !== 'string') throw new WebhookAdminInputError(BAD_ADMIN_FIELD(field, 'given once'));
  return value;
}

/** `?limit&status&triggerId&from&to&q&before` as a filter; the service checks the values. */
function historyFilter(query: Record<string, QueryValue>): HistoryFilter {
  const filter: HistoryFilter = {};
  const text = (field: string): string | undefined =>
    query[field] === undefined || query[field] === '' ? undefined : single(query[field], field);
  const limit = text('limit');
  if (limit !== undefined) filter.limit = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
  const status = text('status');
  if (status !== undefined) filter.status = status as InvocationStatus;
  const triggerId = text('triggerId');
  if (triggerId !== undefined) filter.triggerId = triggerId;
  for (const field of ['from', 'to'] as const) {
    const value = text(field);
    if (value !== undefined) filter[field] = new Date(/^\d{4}-\d\d-\d\d/.test(value) ? value : NaN);
  }
  const search = text('q');
  if (search !== undefined) filter.search = search;
  const before = text('before');
  if (before !== undefined) filter.before = before;
  return filter;
}
