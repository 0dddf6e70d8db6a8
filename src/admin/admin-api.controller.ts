import { Body, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Req, Sse, type MessageEvent } from '@nestjs/common';
import type { Socket } from 'node:net';
import type { Observable } from 'rxjs';
import { WebhookAdminNotFoundError } from '../errors/webhook-trigger.errors.js';
import {
  NO_CALLBACK,
  UNKNOWN_ACCOUNT,
  UNKNOWN_BOT,
  UNKNOWN_DELIVERY,
  UNKNOWN_INVOCATION_ID,
  UNKNOWN_SIGNING_SECRET,
  UNKNOWN_TRIGGER,
  UNKNOWN_TRIGGER_KEY,
} from '../errors/webhook-trigger.messages.js';
import {
  type AdminAccount,
  type AdminAuditPage,
  type AllowedIps,
  type AdminBot,
  type AdminCallback,
  type AdminDelivery,
  type AdminRequestSigning,
  type AdminRotatedSigningSecret,
  type AdminRun,
  type AdminTriggerKey,
  type CreatedKey,
  type CreatedTrigger,
  type ListedRun,
  type ListedTrigger,
  type Redelivery,
  type ReplayedRun,
  type RotatedKey,
  type RunsOverview,
  type ViewedTrigger,
  botAnswer,
  found,
  listedRunAnswer,
  listedTriggerAnswer,
  redeliveryAnswer,
  rotatedKeyAnswer,
  triggerAnswer,
  triggerKeyAnswer,
} from './admin-api-answers.js';
import { historyFilter, optionalObject, queryParam, type RequestQuery, requireObject } from './admin-api-requests.js';
import { AdminEventStreams } from './admin-event-streams.js';
import { AdminServiceLookup } from './admin-service-lookup.js';
import { requestOrigin } from './request-origin.js';
import { auditFilter } from './audit/audit-api-requests.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import type { WebhookTriggersAdmin } from './webhook-triggers.admin.js';
import type { RequestSigning } from '../persistence/records.js';
import type { OverviewWindow } from './admin-views.js';

/**
 * The admin JSON API (`<path>/api`), a thin HTTP layer over `WebhookTriggersAdmin`: the service checks and
 * decides, admin-api-requests.ts reads requests, admin-api-answers.ts shapes answers. Mounted by
 * `WebhookTriggerAdminModule` under its path with the host's guards; left out of OpenAPI.
 */
export class AdminApiController {
  constructor(
    private readonly lookup: AdminServiceLookup,
    private readonly streams: AdminEventStreams,
    @Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings,
  ) {}

  private get admin(): WebhookTriggersAdmin {
    return this.lookup.admin;
  }

  @Get('bots')
  async listBots(): Promise<AdminBot[]> {
    return (await this.admin.listBotSummaries()).map(botAnswer);
  }

  @Get('bots/:botId')
  async getBot(@Param('botId') botId: string): Promise<AdminBot> {
    return botAnswer(found(await this.admin.getBotSummary(botId), UNKNOWN_BOT(botId)));
  }

  @Get('bots/:botId/triggers')
  async listTriggers(@Param('botId') botId: string, @Req() request: unknown): Promise<ListedTrigger[]> {
    this.requireBot(botId);
    return (await this.admin.listTriggers(botId, requestOrigin(request))).map(listedTriggerAnswer);
  }

  @Post('bots/:botId/triggers')
  @HttpCode(201)
  async createTrigger(@Param('botId') botId: string, @Body() body: unknown, @Req() request: unknown): Promise<CreatedTrigger> {
    this.requireBot(botId);
    const { name, type } = requireObject(body);
    const input = { name: name as string, type: type as string | undefined };
    return triggerAnswer(await this.admin.createTrigger(botId, input, requestOrigin(request)));
  }

  @Get('triggers/:triggerId')
  async viewTrigger(@Param('triggerId') triggerId: string, @Req() request: unknown): Promise<ViewedTrigger> {
    const viewed = found(await this.admin.viewTrigger(triggerId, requestOrigin(request)), UNKNOWN_TRIGGER(triggerId));
    // The trigger's view shows its callback: with it here, the screens never ask for one that is not there (a 404).
    return { ...triggerAnswer(viewed), allowedIps: viewed.allowedIps, callback: await this.admin.getCallback(triggerId) };
  }

  @Put('triggers/:triggerId/allowed-ips')
  async setAllowedIps(@Param('triggerId') triggerId: string, @Body() body: unknown): Promise<AllowedIps> {
    const { allowedIps } = requireObject(body);
    return { allowedIps: found(await this.admin.setAllowedIps(triggerId, allowedIps as string[]), UNKNOWN_TRIGGER(triggerId)) };
  }

  @Get('overview')
  async getOverview(@Query() query: RequestQuery): Promise<RunsOverview> {
    return this.admin.getOverview((queryParam(query, 'window') ?? 'hour') as OverviewWindow);
  }

  @Get('audit-log')
  async listAuditLog(@Query() query: RequestQuery): Promise<AdminAuditPage> {
    return this.admin.listAuditLog(auditFilter(query));
  }

  @Post('triggers/:triggerId/rotate-key')
  @HttpCode(200)
  async rotateKey(@Param('triggerId') triggerId: string, @Req() request: unknown): Promise<RotatedKey> {
    return rotatedKeyAnswer(found(await this.admin.rotateKey(triggerId, requestOrigin(request)), UNKNOWN_TRIGGER(triggerId)));
  }

  @Get('triggers/:triggerId/keys')
  async listKeys(@Param('triggerId') triggerId: string): Promise<AdminTriggerKey[]> {
    return found(await this.admin.listKeys(triggerId), UNKNOWN_TRIGGER(triggerId)).map(triggerKeyAnswer);
  }

  @Post('triggers/:triggerId/keys')
  @HttpCode(201)
  async createKey(@Param('triggerId') triggerId: string, @Body() body: unknown): Promise<CreatedKey> {
    const { label, expiresAt } = optionalObject(body);
    const input = { label: label as string | undefined, expiresAt: expiresAt as string | null | undefined };
    return found(await this.admin.createKey(triggerId, input), UNKNOWN_TRIGGER(triggerId));
  }

  @Delete('triggers/:triggerId/keys/:keyId')
  @HttpCode(204)
  async revokeKey(@Param('triggerId') triggerId: string, @Param('keyId') keyId: string): Promise<void> {
    if (!(await this.admin.revokeKey(triggerId, keyId))) throw new WebhookAdminNotFoundError(UNKNOWN_TRIGGER_KEY(keyId));
  }

  @Delete('triggers/:triggerId')
  @HttpCode(204)
  async deleteTrigger(@Param('triggerId') triggerId: string): Promise<void> {
    if (!(await this.admin.deleteTrigger(triggerId))) throw new WebhookAdminNotFoundError(UNKNOWN_TRIGGER(triggerId));
  }

  @Get('triggers/:triggerId/callback')
  async getCallback(@Param('triggerId') triggerId: string): Promise<AdminCallback> {
    return found(await this.admin.getCallback(triggerId), NO_CALLBACK(triggerId));
  }

  @Put('triggers/:triggerId/callback')
  async setCallback(@Param('triggerId') triggerId: string, @Body() body: unknown): Promise<AdminCallback> {
    const { url, events } = requireObject(body);
    const set = await this.admin.setCallback(triggerId, { url: url as string, events: events as string[] | undefined });
    return found(set, UNKNOWN_TRIGGER(triggerId));
  }

  @Delete('triggers/:triggerId/callback')
  @HttpCode(204)
  async deleteCallback(@Param('triggerId') triggerId: string): Promise<void> {
    if (!(await this.admin.deleteCallback(triggerId))) throw new WebhookAdminNotFoundError(NO_CALLBACK(triggerId));
  }

  @Post('triggers/:triggerId/callback/rotate-secret')
  @HttpCode(200)
  async rotateCallbackSecret(@Param('triggerId') triggerId: string): Promise<AdminCallback> {
    return found(await this.admin.rotateCallbackSecret(triggerId), NO_CALLBACK(triggerId));
  }

  @Get('triggers/:triggerId/signing')
  async getRequestSigning(@Param('triggerId') triggerId: string): Promise<AdminRequestSigning> {
    return found(await this.admin.getRequestSigning(triggerId), UNKNOWN_TRIGGER(triggerId));
  }

  @Put('triggers/:triggerId/signing')
  async setRequestSigning(@Param('triggerId') triggerId: string, @Body() body: unknown): Promise<AdminRequestSigning> {
    const { mode } = requireObject(body);
    return found(await this.admin.setRequestSigning(triggerId, mode as RequestSigning), UNKNOWN_TRIGGER(triggerId));
  }

  @Post('triggers/:triggerId/signing/secrets')
  @HttpCode(201)
  async rotateSigningSecret(@Param('triggerId') triggerId: string): Promise<AdminRotatedSigningSecret> {
    return found(await this.admin.rotateSigningSecret(triggerId), UNKNOWN_TRIGGER(triggerId));
  }

  @Post('triggers/:triggerId/signing/secrets/:secretId/revoke')
  @HttpCode(200)
  async revokeSigningSecret(@Param('triggerId') triggerId: string, @Param('secretId') secretId: string): Promise<AdminRequestSigning> {
    if (!(await this.admin.getRequestSigning(triggerId))) throw new WebhookAdminNotFoundError(UNKNOWN_TRIGGER(triggerId));
    return found(await this.admin.revokeSigningSecret(triggerId, secretId), UNKNOWN_SIGNING_SECRET(secretId));
  }

  @Get('triggers/:triggerId/deliveries')
  async listDeliveries(@Param('triggerId') triggerId: string): Promise<AdminDelivery[]> {
    return found(await this.admin.listDeliveries(triggerId), UNKNOWN_TRIGGER(triggerId));
  }

  @Get('invocations/:invocationId/deliveries')
  async listInvocationDeliveries(@Param('invocationId') id: string): Promise<AdminDelivery[]> {
    return this.admin.listInvocationDeliveries(id);
  }

  @Post('deliveries/:deliveryId/redeliver')
  @HttpCode(202)
  async redeliver(@Param('deliveryId') deliveryId: string): Promise<Redelivery> {
    if (!(await this.admin.redeliver(deliveryId))) throw new WebhookAdminNotFoundError(UNKNOWN_DELIVERY(deliveryId));
    return redeliveryAnswer(deliveryId);
  }

  @Get('bots/:botId/invocations')
  async listInvocations(@Param('botId') botId: string, @Query() query: RequestQuery): Promise<ListedRun[]> {
    this.requireBot(botId);
    return (await this.admin.listInvocations(botId, historyFilter(query))).map(listedRunAnswer);
  }

  @Get('invocations/:invocationId')
  async getInvocation(@Param('invocationId') id: string): Promise<AdminRun> {
    return found(await this.admin.getInvocationDetail(id, this.settings), UNKNOWN_INVOCATION_ID(id));
  }

  @Post('invocations/:invocationId/cancel')
  @HttpCode(200)
  async cancelInvocation(@Param('invocationId') id: string): Promise<AdminRun> {
    return found(await this.admin.cancelInvocation(id, this.settings), UNKNOWN_INVOCATION_ID(id));
  }

  @Post('invocations/:invocationId/replay')
  @HttpCode(201)
  async replayInvocation(@Param('invocationId') id: string, @Body() body: unknown): Promise<ReplayedRun> {
    const { inputs } = optionalObject(body);
    return found(await this.admin.replayInvocation(id, inputs), UNKNOWN_INVOCATION_ID(id));
  }

  @Get('accounts/:accountId')
  async getAccount(@Param('accountId') accountId: string): Promise<AdminAccount> {
    return found(await this.admin.getCredits(accountId), UNKNOWN_ACCOUNT(accountId));
  }

  @Put('accounts/:accountId/credits')
  async setCredits(@Param('accountId') accountId: string, @Body() body: unknown): Promise<AdminAccount> {
    const { credits } = requireObject(body);
    return this.admin.setCredits(accountId, credits as number);
  }

  @Sse('events')
  events(@Req() request: { socket?: Socket; raw?: { socket?: Socket } }, @Query() query: RequestQuery): Observable<MessageEvent> {
    const botId = queryParam(query, 'botId');
    if (botId !== undefined) this.requireBot(botId);
    return this.streams.stream(this.admin, botId, request.raw?.socket ?? request.socket);
  }

  private requireBot(botId: string): void {
    if (!this.admin.listBots().some((b) => b.id === botId)) throw new WebhookAdminNotFoundError(UNKNOWN_BOT(botId.slice(0, 200)));
  }
}
