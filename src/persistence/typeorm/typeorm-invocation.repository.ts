import { Injectable } from '@nestjs/common';
import { LessThan, MoreThanOrEqual, QueryFailedError } from 'typeorm';
import {
  IdempotencyKeyTakenError,
  type InvocationRecord,
  type InvocationStatus,
  type InvocationTransition,
  type NewInvocation,
} from '../records.js';
import { InvocationRepository } from '../invocation.repository.js';
import { WebhookInvocationEntity } from './entities.js';
import { TypeOrmUnitOfWork } from './typeorm-unit-of-work.js';

function toRecord(row: WebhookInvocationEntity): InvocationRecord {
  return { ...row };
}

/** SQLite says "UNIQUE constraint failed", PostgreSQL answers code 23505. */
function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const driverError = error.driverError as { code?: string } | undefined;
  return driverError?.code === '23505' || /UNIQUE constraint failed/i.test(error.message);
}

@Injectable()
export class TypeOrmInvocationRepository extends InvocationRepository {
  constructor(private readonly db: TypeOrmUnitOfWork) {
    super();
  }

  insert(invocation: NewInvocation): Promise<void> {
    return this.db.use(async (m) => {
      try {
        // simple-json columns take any JSON; TypeORM's deep-partial type cannot express that.
        await m.insert(WebhookInvocationEntity, {
          ...(invocation as Omit<NewInvocation, 'inputs'> & { inputs: never }),
          status: 'queued',
          outputs: null,
          error: null,
          startedAt: null,
          finishedAt: null,
        });
      } catch (error) {
        if (invocation.idempotencyKey !== null && isUniqueViolation(error)) {
          throw new IdempotencyKeyTakenError(invocation.triggerId, invocation.idempotencyKey);
        }
        throw error;
      }
    });
  }

  findById(id: string): Promise<InvocationRecord | null> {
    return this.db.use(async (m) => {
      const row = await m.findOneBy(WebhookInvocationEntity, { id });
      return row ? toRecord(row) : null;
    });
  }

  findByIdempotencyKey(triggerId: string, key: string, since: Date): Promise<InvocationRecord | null> {
    return this.db.use(async (m) => {
      const row = await m.findOneBy(WebhookInvocationEntity, {
        triggerId,
        idempotencyKey: key,
        createdAt: MoreThanOrEqual(since),
      });
      return row ? toRecord(row) : null;
    });
  }

  releaseIdempotencyKey(triggerId: string, key: string, before: Date): Promise<void> {
    return this.db.use(async (m) => {
      await m.update(
        WebhookInvocationEntity,
        { triggerId, idempotencyKey: key, createdAt: LessThan(before) },
        { idempotencyKey: null },
      );
    });
  }

  transition(id: string, from: InvocationStatus, to: InvocationStatus, fields: InvocationTransition): Promise<boolean> {
    return this.db.use(async (m) => {
      const result = await m.update(WebhookInvocationEntity, { id, status: from }, { ...fields, status: to });
      return (result.affected ?? 0) === 1;
    });
  }

  listIdsByStatus(status: InvocationStatus, limit: number): Promise<string[]> {
    return this.db.use(async (m) => {
      const rows = await m.find(WebhookInvocationEntity, { select: { id: true }, where: { status }, order: { createdAt: 'ASC', id: 'ASC' }, take: limit });
      return rows.map((r) => r.id);
    });
  }

  listByBot(botId: string, limit: number): Promise<InvocationRecord[]> {
    return this.db.use(async (m) => {
      const rows = await m.find(WebhookInvocationEntity, {
        where: { botId },
        order: { createdAt: 'DESC', id: 'DESC' },
        take: limit,
      });
      return rows.map(toRecord);
    });
  }
}
