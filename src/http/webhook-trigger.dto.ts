import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

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
}

export class SyncResponseDto {
  @ApiProperty({ description: 'True when the bot succeeded; false when it failed.' })
  success!: boolean;

  @ApiProperty({ type: [BotOutputDto] })
  outputs!: BotOutputDto[];

  @ApiPropertyOptional({ type: InvocationErrorDto, description: 'Present when the bot failed.' })
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
}
