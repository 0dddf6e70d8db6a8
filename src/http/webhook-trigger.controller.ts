import { Controller, Get, Headers, HttpCode, Inject, Param, Post, Req, Res, UseFilters, UseGuards, VERSION_NEUTRAL } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiQuery,
  ApiResponse,
  ApiSecurity,
  ApiTags,
} from './openapi-decorators.js';
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationService } from '../invocations/invocation.service.js';
import { InvocationWaiter } from '../invocations/invocation.waiter.js';
import type { TriggerRecord } from '../persistence/records.js';
import { INVOCATION_ID_PATTERN } from '../keys/ids.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WEBHOOK_KEY_SCHEME } from './openapi.js';
import { WEBHOOK_ROUTES, WEBHOOKS_PATH } from './webhook-routes.js';
import { onClientGone } from './client-gone.js';
import { InvalidRequestError, SyncTimeoutError, UnknownInvocationError } from '../errors/webhook-trigger.errors.js';
import { BAD_AFTER, BAD_IDEMPOTENCY_KEY, BAD_TIMEOUT } from '../errors/webhook-trigger.messages.js';
import { statusBody, syncBody } from './invocation-responses.js';
import { CurrentTrigger } from './current-trigger.decorator.js';
import { QueryText } from './query-text.js';
import { readBody } from './body-capture/read-body.js';
import { deferredBodyOf, rawRequestOf } from './http.types.js';
import { checkJsonContentType, parseTriggerBody } from './webhook-body.parser.js';
import { WebhookExceptionFilter } from './webhook-exception.filter.js';
import { RunEventStreams } from './run-event-streams.js';
import { BotOutputDto, StatusResponseDto, SyncResponseDto, TriggerResponseDto, WebhookErrorDto } from './webhook-trigger.dto.js';
import { TriggerKeyGuard } from './trigger-key.guard.js';
import { SignedRequests, SignedRoute } from './signed-requests.js';
import { traceRequest, traceSyncWait } from '../telemetry/run-tracing.js';
import { TRACE_ATTRIBUTES } from '../telemetry/trace-attributes.js';

/** The header that makes a trigger request idempotent (as Node spells incoming header names). */
const IDEMPOTENCY_HEADER = 'idempotency-key';
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

@ApiTags('webhooks')
@ApiSecurity(WEBHOOK_KEY_SCHEME)
@ApiExtraModels(BotOutputDto)
@ApiHeader({ name: 'X-Key', required: true, description: "The trigger's key (header name is case-insensitive)." })
@ApiParam({ name: 'triggerId', description: 'The trigger identifier from its URL.' })
@ApiResponse({ status: 401, type: WebhookErrorDto, description: 'Missing or wrong X-Key.' })
@ApiResponse({ status: 404, type: WebhookErrorDto, description: 'Unknown or deleted trigger (or invocation).' })
@ApiResponse({ status: 429, type: WebhookErrorDto, description: 'Rate limit exceeded; see Retry-After.' })
// Version-neutral: the spec's paths carry no version segment, whatever versioning the host enables.
@Controller({ path: WEBHOOKS_PATH, version: VERSION_NEUTRAL })
@UseGuards(TriggerKeyGuard)
@UseFilters(WebhookExceptionFilter)
export class WebhookTriggerController {
  constructor(
    private readonly invocations: InvocationService,
    private readonly waiter: InvocationWaiter,
    private readonly streams: RunEventStreams,
    private readonly signedRequests: SignedRequests,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  @Post(WEBHOOK_ROUTES.trigger)
  @SignedRoute()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'triggerBot',
    summary: 'Trigger bot execution',
    description: 'Starts the bot in the background with the JSON body as its inputs and answers at once.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'Repeats with the same key on this trigger within idempotencyTtlMs (24 h by default) return the first invocation and charge nothing.',
  })
  @ApiHeader({
    name: 'webhook-signature',
    required: false,
    description:
      'On a trigger with signed requests (Standard Webhooks, docs/security.md): "v1,<base64 HMAC-SHA256>" of "{webhook-id}.{webhook-timestamp}.{body}", with webhook-id and webhook-timestamp (Unix seconds, within 5 minutes).',
  })
  @ApiBody({ schema: { type: 'object', additionalProperties: true }, description: 'Bot inputs: any JSON object.' })
  @ApiResponse({ status: 200, type: TriggerResponseDto, description: 'The run was accepted.' })
  @ApiResponse({
    status: 400,
    type: WebhookErrorDto,
    description: 'Malformed JSON, not a JSON object, nested deeper than maxJsonDepth, or a bad Idempotency-Key.',
  })
  @ApiResponse({
    status: 408,
    type: WebhookErrorDto,
    description: 'The body did not arrive within bodyTimeoutMs; the connection is closed.',
  })
  @ApiResponse({ status: 402, type: WebhookErrorDto, description: 'The owning account has too few credits; nothing runs.' })
  @ApiResponse({
    status: 413,
    type: WebhookErrorDto,
    description: 'Body (or its declared Content-Length) larger than maxBodyBytes; the connection is closed.',
  })
  @ApiResponse({ status: 415, type: WebhookErrorDto, description: 'Content-Type is not application/json.' })
  @ApiResponse({ status: 422, type: WebhookErrorDto, description: 'The Idempotency-Key was used before with a different body.' })
  @ApiResponse({
    status: 503,
    type: WebhookErrorDto,
    description:
      'The application is shutting down, or maxQueuedRuns runs are already waiting to start; nothing is stored or charged. See Retry-After.',
  })
  trigger(@CurrentTrigger() trigger: TriggerRecord, @Req() request: unknown): Promise<TriggerResponseDto> {
    // Not async: the handler answers traceRequest's promise itself (an async frame around it costs two more promises).
    // The guards passed (trigger, key, limits); what the headers say is judged before a byte is read.
    const raw = rawRequestOf(request);
    return traceRequest('trigger', raw.headers, trigger, async (span) => {
      const body = deferredBodyOf(raw);
      checkJsonContentType(body.contentType);
      const idempotencyKey = raw.headers[IDEMPOTENCY_HEADER];
      if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(idempotencyKey))) {
        throw new InvalidRequestError(BAD_IDEMPOTENCY_KEY);
      }
      const bytes = await readBody(body, this.options.maxBodyBytes, this.options.bodyTimeoutMs);
      // A signed request (the trigger's requestSigning) is verified on the raw bytes, before anything is parsed or stored.
      const started = await this.signedRequests.acceptSigned(raw, bytes, () => {
        const inputs = parseTriggerBody(bytes, this.options.maxJsonDepth);
        const requestHash = idempotencyKey === undefined ? undefined : createHash('sha256').update(bytes).digest('hex');
        return this.invocations.start(trigger, inputs, { idempotencyKey, requestHash, traceContext: span.traceContext() });
      });
      span.set({
        [TRACE_ATTRIBUTES.invocationId]: started.id,
        [TRACE_ATTRIBUTES.credits]: started.credits,
        [TRACE_ATTRIBUTES.replayed]: started.replayed,
      });
      return { success: true, invocation: { id: started.id } };
    });
  }

  @Get(WEBHOOK_ROUTES.sync)
  @ApiOperation({
    operationId: 'waitForBotExecution',
    summary: 'Wait for bot execution to complete',
    description:
      'Blocks until the run finishes, or answers 408 after the wait (5 minutes by default, or ?timeout seconds); call again to keep waiting.',
  })
  @ApiParam({ name: 'invocationId', description: 'The invocation.id returned by the trigger endpoint.' })
  @ApiQuery({ name: 'timeout', required: false, description: 'Seconds to wait, 1–300 (never more than the configured wait).' })
  @ApiResponse({ status: 200, type: SyncResponseDto, description: 'The run finished; success tells whether the bot succeeded.' })
  @ApiResponse({ status: 400, type: WebhookErrorDto, description: 'timeout is not a whole number from 1 to 300, or not given once.' })
  @ApiResponse({ status: 408, type: WebhookErrorDto, description: 'The run did not finish in time (the body gives its status); retry.' })
  @ApiResponse({ status: 503, type: WebhookErrorDto, description: 'maxSyncWaiters syncs already wait in this process; see Retry-After.' })
  sync(
    @CurrentTrigger() trigger: TriggerRecord,
    @Param('invocationId') invocationId: string,
    @QueryText('timeout') timeout: string | undefined,
    @Res({ passthrough: true }) response: unknown,
    @Req() request: unknown,
  ): Promise<SyncResponseDto | undefined> {
    return traceRequest('sync', rawRequestOf(request).headers, trigger, async (span) => {
      span.set({ [TRACE_ATTRIBUTES.invocationId]: invocationId });
      const waitMs = this.waitMs(timeout);
      this.checkInvocationId(invocationId);
      // A client that went away (or goes) must not keep its waiter.
      const rawResponse = ((response as { raw?: ServerResponse }).raw ?? response) as ServerResponse;
      const gone = new AbortController();
      const stopWatching = onClientGone(rawResponse, () => gone.abort());
      try {
        const result = await traceSyncWait(span, () => this.waiter.wait(trigger, invocationId, waitMs, gone.signal));
        switch (result.kind) {
          case 'not-found':
            throw new UnknownInvocationError(invocationId);
          case 'aborted':
            return undefined; // nobody is listening any more
          case 'timeout':
            throw new SyncTimeoutError(result.invocation.status, { waitMs });
          case 'shutdown':
            throw new SyncTimeoutError(result.invocation.status, 'shutdown');
          case 'finished':
            return syncBody(result.invocation);
        }
      } finally {
        stopWatching();
      }
    });
  }

  @Get(WEBHOOK_ROUTES.status)
  @ApiOperation({
    operationId: 'getInvocationStatus',
    summary: 'Get the status of a run',
    description: "Answers at once with the run's state, and its outputs or error once finished.",
  })
  @ApiParam({ name: 'invocationId', description: 'The invocation.id returned by the trigger endpoint.' })
  @ApiResponse({ status: 200, type: StatusResponseDto, description: 'The run; success is false once it ended without success.' })
  status(
    @CurrentTrigger() trigger: TriggerRecord,
    @Param('invocationId') invocationId: string,
    @Req() request: unknown,
  ): Promise<StatusResponseDto> {
    return traceRequest('status', rawRequestOf(request).headers, trigger, async (span) => {
      span.set({ [TRACE_ATTRIBUTES.invocationId]: invocationId });
      this.checkInvocationId(invocationId);
      const invocation = await this.invocations.find(trigger, invocationId);
      if (!invocation) throw new UnknownInvocationError(invocationId);
      span.set({ [TRACE_ATTRIBUTES.runStatus]: invocation.status });
      return statusBody(invocation);
    });
  }

  @Post(WEBHOOK_ROUTES.cancel)
  @HttpCode(200)
  @ApiOperation({
    operationId: 'cancelInvocation',
    summary: 'Cancel a run',
    description:
      'A queued run is cancelled and its credits refunded; a running one is cancelled (no refund) and its bot is signalled to stop.',
  })
  @ApiParam({ name: 'invocationId', description: 'The invocation.id returned by the trigger endpoint.' })
  @ApiResponse({ status: 200, type: StatusResponseDto, description: 'Cancelled; status is "cancelled".' })
  @ApiResponse({ status: 409, type: WebhookErrorDto, description: 'The run had already finished.' })
  cancel(
    @CurrentTrigger() trigger: TriggerRecord,
    @Param('invocationId') invocationId: string,
    @Req() request: unknown,
  ): Promise<StatusResponseDto> {
    return traceRequest('cancel', rawRequestOf(request).headers, trigger, async (span) => {
      span.set({ [TRACE_ATTRIBUTES.invocationId]: invocationId });
      this.checkInvocationId(invocationId);
      const invocation = await this.invocations.cancel(trigger, invocationId);
      if (!invocation) throw new UnknownInvocationError(invocationId);
      span.set({ [TRACE_ATTRIBUTES.runStatus]: invocation.status });
      return statusBody(invocation);
    });
  }

  @Get(WEBHOOK_ROUTES.events)
  @ApiOperation({
    operationId: 'streamInvocationEvents',
    summary: "Stream a run's events",
    description:
      'Server-sent events (text/event-stream): `status` ({ status }) on every state change, `output` (one output, as the bot emits it, then the returned ones), ' +
      'and last `done` (the body sync answers), after which the stream ends. Each event has an `id` that increases per run: resume with the ' +
      'Last-Event-ID header (or ?after=<id>) without loss or repeat. A finished run answers its whole history and done at once; ' +
      '`: keepalive` comments every 15 s.',
  })
  @ApiParam({ name: 'invocationId', description: 'The invocation.id returned by the trigger endpoint.' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'The id of the last event received: only later events are sent.' })
  @ApiQuery({ name: 'after', required: false, description: 'Like Last-Event-ID, for clients that cannot set headers (the header wins).' })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: 'The event stream (text/event-stream).',
    content: { 'text/event-stream': { schema: { type: 'string', example: 'id: 1\nevent: status\ndata: {"status":"queued"}\n\n' } } },
  })
  @ApiResponse({ status: 204, description: 'The run finished and the client already has every event up to done.' })
  @ApiResponse({
    status: 400,
    type: WebhookErrorDto,
    description: 'Last-Event-ID or after is not a whole number, or after is not given once.',
  })
  @ApiResponse({
    status: 429,
    type: WebhookErrorDto,
    description:
      'Rate limit exceeded, or this trigger (maxEventStreamsPerTrigger) or its account (maxEventStreamsPerAccount) holds its share of streams; see Retry-After.',
  })
  @ApiResponse({
    status: 503,
    type: WebhookErrorDto,
    description: 'Too many streams are open on this server (maxEventStreams), or it is shutting down; see Retry-After.',
  })
  async events(
    @CurrentTrigger() trigger: TriggerRecord,
    @Param('invocationId') invocationId: string,
    @QueryText('after') after: string | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() response: unknown,
  ): Promise<void> {
    this.checkInvocationId(invocationId);
    const from = lastEventId ?? after;
    if (from !== undefined && !/^\d{1,9}$/.test(from.trim())) throw new InvalidRequestError(BAD_AFTER);
    const reply = response as { raw?: ServerResponse; hijack?: () => void };
    const raw = (reply.raw ?? response) as ServerResponse;
    // Fastify: the response is ours from here on (written on the raw socket), not the reply's.
    await this.streams.serve(trigger, invocationId, from === undefined ? 0 : Number(from.trim()), raw, () => reply.hijack?.());
  }

  /** `?timeout=` in seconds, 1–300, capped by the configured wait. */
  private waitMs(timeout: string | undefined): number {
    if (timeout === undefined) return this.options.syncTimeoutMs;
    const seconds = /^\d{1,3}$/.test(timeout) ? Number(timeout) : NaN;
    if (!(seconds >= 1 && seconds <= 300)) throw new InvalidRequestError(BAD_TIMEOUT);
    return Math.min(seconds * 1000, this.options.syncTimeoutMs);
  }

  /** An id that cannot exist is not worth a query. */
  private checkInvocationId(invocationId: string): void {
    if (!INVOCATION_ID_PATTERN.test(invocationId)) throw new UnknownInvocationError(invocationId);
  }
}
