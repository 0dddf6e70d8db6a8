import {
  BadRequestException,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Put,
  Query,
  UseGuards,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { WebhookAdminInputError, WebhookTriggersAdmin, type TriggerWithKey } from '../../../src/index.js';
import { AdminTokenGuard } from './admin-token.guard.js';

/**
 * The admin JSON API behind the admin page: a thin HTTP layer over the library's `WebhookTriggersAdmin`.
 * Not part of the published webhook API, so it is kept out of /openapi.json.
 */
@ApiExcludeController()
@Controller('admin/api')
@UseGuards(AdminTokenGuard)
export class AdminApiController {
  constructor(private readonly admin: WebhookTriggersAdmin) {}

  @Get('bots')
  listBots() {
    return this.admin.listBots().map(({ id, name, accountId }) => ({ id, name, accountId }));
  }

  @Post('bots/:botId/triggers')
  @HttpCode(201)
  async createTrigger(@Param('botId') botId: string, @Body() body: unknown) {
    this.requireBot(botId);
    const input = requireObject(body);
    const trigger = await this.run(() =>
      this.admin.createTrigger(botId, { name: input.name as string, type: input.type as string | undefined }),
    );
    return withKey(trigger);
  }

  @Get('bots/:botId/triggers')
  async listTriggers(@Param('botId') botId: string) {
    this.requireBot(botId);
    return (await this.admin.listTriggers(botId)).map(({ id, name, type, url, createdAt }) => ({ id, name, type, url, createdAt }));
  }

  @Get('triggers/:triggerId')
  async viewTrigger(@Param('triggerId') triggerId: string) {
    return withKey(found(await this.admin.viewTrigger(triggerId), `No trigger ${triggerId}`));
  }

  @Post('triggers/:triggerId/rotate-key')
  @HttpCode(200)
  async rotateKey(@Param('triggerId') triggerId: string) {
    const { id, url, key } = found(await this.admin.rotateKey(triggerId), `No trigger ${triggerId}`);
    return { id, url, key };
  }

  @Delete('triggers/:triggerId')
  @HttpCode(204)
  async deleteTrigger(@Param('triggerId') triggerId: string): Promise<void> {
    if (!(await this.admin.deleteTrigger(triggerId))) throw new NotFoundException(`No trigger ${triggerId}`);
  }

  @Get('bots/:botId/invocations')
  async listInvocations(@Param('botId') botId: string, @Query('limit') limit?: string) {
    this.requireBot(botId);
    let take = 100;
    if (limit !== undefined) {
      take = /^\d+$/.test(limit) ? Number(limit) : NaN;
      if (!(take >= 1 && take <= 1000)) throw new BadRequestException('limit must be a whole number from 1 to 1000');
    }
    return (await this.admin.listInvocations(botId, take)).map(
      ({ id, triggerId, status, createdAt, startedAt, finishedAt, durationMs, outputs, error }) => ({
        id,
        triggerId,
        status,
        createdAt,
        startedAt,
        finishedAt,
        durationMs,
        outputs,
        error,
      }),
    );
  }

  @Get('accounts/:accountId')
  async getAccount(@Param('accountId') accountId: string) {
    return found(await this.admin.getCredits(accountId), `No account ${accountId}`);
  }

  @Put('accounts/:accountId/credits')
  async setCredits(@Param('accountId') accountId: string, @Body() body: unknown) {
    const { credits } = requireObject(body);
    if (typeof credits !== 'number') throw new BadRequestException('credits must be a whole number ≥ 0');
    return this.run(() => this.admin.setCredits(accountId, credits));
  }

  private requireBot(botId: string): void {
    if (!this.admin.listBots().some((b) => b.id === botId)) throw new NotFoundException(`No bot ${botId}`);
  }

  /** The admin service throws WebhookAdminInputError for bad input: that is the caller's 400. */
  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof WebhookAdminInputError) throw new BadRequestException(e.message);
      throw e;
    }
  }
}

function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestException('Send a JSON object with Content-Type: application/json');
  }
  return body as Record<string, unknown>;
}

function found<T>(value: T | null, message: string): T {
  if (value === null) throw new NotFoundException(message);
  return value;
}

function withKey({ id, name, type, botId, url, key }: TriggerWithKey) {
  return { id, name, type, botId, url, key };
}
