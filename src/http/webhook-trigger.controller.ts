import {
  BadRequestException,
  Controller,
  Get,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Req,
  RequestTimeoutException,
  Res,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ResolvedWebhookTriggerOptions } from '../interfaces/webhook-trigger-options.interface.js';
import { InvocationService } from '../invocations/invocation.service.js';
import { InvocationWaiter } from '../invocations/invocation.waiter.js';
import type { TriggerRecord } from '../persistence/records.js';
import { INVOCATION_ID_PATTERN, RESOLVED_OPTIONS, WEBHOOKS_PATH } from '../webhook-trigger.constants.js';
import { SYNC_TIMEOUT, UNKNOWN_INVOCATION } from '../webhook-trigger.messages.js';
import { CurrentTrigger } from './current-trigger.decorator.js';
import { CAPTURED_BODY, rawRequestOf } from './http.types.js';
import { parseTriggerBody } from './webhook-body.parser.js';
import { WebhookExceptionFilter } from './webhook-exception.filter.js';
import { BotOutputDto, SyncResponseDto, TriggerResponseDto, WebhookErrorDto } from './webhook-trigger.dto.js';
import { TriggerKeyGuard } from './trigger-key.guard.js';
import { WebhookThrottlerGuard } from './webhook-throttler.guard.js';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

@ApiTags('webhooks')
@ApiSecurity('X-Key')
@ApiExtraModels(BotOutputDto)
@ApiHeader({ name: 'X-Key', required: true, description: "The trigger's key (header name is case-insensitive)." })
@ApiParam({ name: 'triggerId', description: 'The trigger identifier from its URL.' })
@ApiResponse({ status: 401, type: WebhookErrorDto, description: 'Missing or wrong X-Key.' })
@ApiResponse({ status: 404, type: WebhookErrorDto, description: 'Unknown or deleted trigger (or invocation).' })
@ApiResponse({ status: 429, type: WebhookErrorDto, description: 'Rate limit exceeded; see Retry-After.' })
@Controller(WEBHOOKS_PATH)
@UseGuards(TriggerKeyGuard, WebhookThrottlerGuard)
@UseFilters(WebhookExceptionFilter)
export class WebhookTriggerController {
  constructor(
    private readonly invocations: InvocationService,
    private readonly waiter: InvocationWaiter,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  @Post(':triggerId/trigger')
  @HttpCode(200)
  @ApiOperation({ operationId: 'triggerBot', summary: 'Trigger bot execution', description: 'Starts the bot in the background with the JSON body as its inputs and answers at once.' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Repeats with the same key on this trigger within 24 h return the first invocation and charge nothing.' })
  @ApiBody({ schema: { type: 'object', additionalProperties: true }, description: 'Bot inputs: any JSON object.' })
  @ApiResponse({ status: 200, type: TriggerResponseDto, description: 'The run was accepted.' })
  @ApiResponse({ status: 400, type: WebhookErrorDto, description: 'Malformed JSON, or not a JSON object.' })
  @ApiResponse({ status: 402, type: WebhookErrorDto, description: 'The owning account has too few credits; nothing runs.' })
  @ApiResponse({ status: 413, type: WebhookErrorDto, description: 'Body larger than maxBodyBytes.' })
  @ApiResponse({ status: 415, type: WebhookErrorDto, description: 'Content-Type is not application/json.' })
  async trigger(@CurrentTrigger() trigger: TriggerRecord, @Req() request: unknown): Promise<TriggerResponseDto> {
    const raw = rawRequestOf(request);
    const inputs = parseTriggerBody(raw[CAPTURED_BODY], this.options.maxBodyBytes);
    const idempotencyKey = raw.headers[this.options.idempotencyHeader];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(idempotencyKey))) {
      throw new BadRequestException('Idempotency-Key must be 1–255 visible ASCII characters');
    }
    const requestHash = idempotencyKey === undefined ? undefined : createHash('sha256').update(raw[CAPTURED_BODY]!.bytes!).digest('hex');
    const started = await this.invocations.start(trigger, inputs, { idempotencyKey, requestHash });
    return { success: true, invocation: { id: started.id } };
  }

  @Get(':triggerId/trigger/invocation/:invocationId/sync')
  @ApiOperation({ summary: 'Wait for bot execution to complete', description: 'Blocks until the run finishes, or answers 408 after the sync timeout (5 minutes by default); call again to keep waiting.' })
  @ApiParam({ name: 'invocationId', description: 'The invocation.id returned by the trigger endpoint.' })
  @ApiResponse({ status: 200, type: SyncResponseDto, description: 'The run finished; success tells whether the bot succeeded.' })
  @ApiResponse({ status: 408, type: WebhookErrorDto, description: 'The run did not finish in time; retry.' })
  async sync(
    @CurrentTrigger() trigger: TriggerRecord,
    @Param('invocationId') invocationId: string,
    @Res({ passthrough: true }) response: unknown,
  ): Promise<SyncResponseDto | undefined> {
    if (!INVOCATION_ID_PATTERN.test(invocationId)) throw new NotFoundException(UNKNOWN_INVOCATION(invocationId.slice(0, 64)));
    // A client that goes away must not keep its waiter: ServerResponse 'close' fires on a dropped connection.
    const rawResponse = ((response as { raw?: ServerResponse }).raw ?? response) as ServerResponse;
    const gone = new AbortController();
    const onClose = () => {
      if (!rawResponse.writableEnded) gone.abort();
    };
    rawResponse.on('close', onClose);
    try {
      const result = await this.waiter.wait(trigger.id, invocationId, this.options.syncTimeoutMs, gone.signal);
      switch (result.kind) {
        case 'not-found':
          throw new NotFoundException(UNKNOWN_INVOCATION(invocationId));
        case 'aborted':
          return undefined; // nobody is listening any more
        case 'timeout':
          throw new RequestTimeoutException(SYNC_TIMEOUT(this.options.syncTimeoutMs));
        case 'finished': {
          const { status, outputs, error } = result.invocation;
          if (status === 'succeeded') return { success: true, outputs: outputs ?? [] };
          return { success: false, outputs: outputs ?? [], error: { message: error?.message ?? 'The run failed' } };
        }
      }
    } finally {
      rawResponse.off('close', onClose);
    }
  }
}
