import { Injectable } from '@nestjs/common';
import { IsNull } from 'typeorm';
import type { TriggerRecord } from '../records.js';
import { TriggerRepository } from '../trigger.repository.js';
import { WebhookTriggerEntity } from './entities.js';
import { TypeOrmUnitOfWork } from './typeorm-unit-of-work.js';

function toRecord(row: WebhookTriggerEntity): TriggerRecord {
  return {
    id: row.id,
    botId: row.botId,
    accountId: row.accountId,
    name: row.name,
    type: row.type,
    keyHash: row.keyHash,
    keyCiphertext: row.keyCiphertext,
    createdAt: row.createdAt,
  };
}

@Injectable()
export class TypeOrmTriggerRepository extends TriggerRepository {
  constructor(private readonly db: TypeOrmUnitOfWork) {
    super();
  }

  findActive(id: string): Promise<TriggerRecord | null> {
    return this.db.use(async (m) => {
      const row = await m.findOneBy(WebhookTriggerEntity, { id, deletedAt: IsNull() });
      return row ? toRecord(row) : null;
    });
  }

  create(trigger: TriggerRecord): Promise<void> {
    return this.db.use(async (m) => {
      await m.insert(WebhookTriggerEntity, { ...trigger, deletedAt: null });
    });
  }

  listByBot(botId: string): Promise<TriggerRecord[]> {
    return this.db.use(async (m) => {
      const rows = await m.find(WebhookTriggerEntity, {
        where: { botId, deletedAt: IsNull() },
        order: { createdAt: 'ASC', id: 'ASC' },
      });
      return rows.map(toRecord);
    });
  }

  replaceKey(id: string, keyHash: string, keyCiphertext: string | null): Promise<boolean> {
    return this.db.use(async (m) => {
      const result = await m.update(WebhookTriggerEntity, { id, deletedAt: IsNull() }, { keyHash, keyCiphertext });
      return (result.affected ?? 0) > 0;
    });
  }

  delete(id: string): Promise<boolean> {
    return this.db.use(async (m) => {
      const result = await m.update(WebhookTriggerEntity, { id, deletedAt: IsNull() }, { deletedAt: new Date() });
      return (result.affected ?? 0) > 0;
    });
  }
}
