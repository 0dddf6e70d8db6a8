import { ApiProperty, ApiPropertyOptional } from './openapi-decorators.js';
import { INVOCATION_STATUSES } from '../persistence/records.js';

export class InvocationRefDto {
  @ApiProperty({ example: 'inv_3q2S1kqD5v0pXb8mVQn0cA' })
  id!: string;
}

export class TriggerResponseDto {
  @ApiProperty({ example: true })
  success!: boolean;

  @ApiProperty({ type: InvocationRefDto })
  invocation!: InvocationRefDto;
}

export class BotOutputDto {
  @ApiProperty({ example: 'Summary' })
  title!: string;

  @ApiProperty({ example: 'The text, in two sentences.' })
  message!: string;
}

export class InvocationErrorDto {
  @ApiProperty({ example: 'bot failed' })
  message!: string;

  @ApiPropertyOptional({
    example: 'timeout',
    description:
      'Set when the run ended for a reason other than its own error: timeout, cancelled, interrupted, interrupted_too_often, invalid_outputs, outputs_too_large, bot_not_registered.',
  })
  code?: string;
}

const STATUSES = [...INVOCATION_STATUSES];

export class SyncResponseDto {
  @ApiProperty({ description: 'True when the bot succeeded; false when it failed.' })
  success!: boolean;

  @ApiPropertyOptional({ enum: STATUSES, description: 'Present when the run did not succeed: failed, cancelled or timed_out.' })
  status?: string;

  @ApiProperty({ type: [BotOutputDto] })
  outputs!: BotOutputDto[];

  @ApiPropertyOptional({ type: InvocationErrorDto, description: 'Present when the run did not succeed.' })
  error?: InvocationErrorDto;
}

export class InvocationStateDto {
  @ApiProperty({ example: 'inv_3q2S1kqD5v0pXb8mVQn0cA' })
  id!: string;

  @ApiProperty({ enum: STATUSES })
  status!: string;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', nullable: true, type: String })
  startedAt!: string | null;

  @ApiProperty({ format: 'date-time', nullable: true, type: String })
  finishedAt!: string | null;
}

export class StatusResponseDto {
  @ApiProperty({ description: 'False once the run ended without success (failed, cancelled, timed_out).' })
  success!: boolean;

  @ApiProperty({ type: InvocationStateDto })
  invocation!: InvocationStateDto;

  @ApiPropertyOptional({ type: [BotOutputDto], description: 'Present once the run finished.' })
  outputs?: BotOutputDto[];

  @ApiPropertyOptional({ type: InvocationErrorDto, description: 'Present when the run ended without success.' })
  error?: InvocationErrorDto;
}

export class WebhookErrorDto {
  @ApiProperty({ example: false })
  success!: boolean;

  @ApiProperty({ example: 401 })
  statusCode!: number;

  @ApiProperty({ example: 'Unauthorized' })
  error!: string;

  @ApiProperty({ example: 'The X-Key header does not match this trigger' })
  message!: string;

  @ApiPropertyOptional({ enum: STATUSES, description: "On 408 from sync: the run's current status." })
  status?: string;
}
