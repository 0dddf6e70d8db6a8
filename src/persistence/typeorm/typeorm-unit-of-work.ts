import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { WEBHOOK_DATA_SOURCE } from '../../webhook-trigger.constants.js';
import { WebhookUnitOfWork } from '../unit-of-work.js';

/**
 * Transactions on the module's DataSource, shared by the TypeORM stores through AsyncLocalStorage.
 *
 * Why the queue on SQLite: TypeORM's SQLite drivers share ONE query runner, so two concurrent
 * `transaction()` calls would nest as savepoints and a statement from elsewhere would land inside
 * someone else's open transaction (and vanish with its rollback). Every statement the stores issue on
 * SQLite therefore runs one at a time, and a transaction holds the queue until it ends. SQLite has a
 * single writer anyway, and each statement is a synchronous better-sqlite3 call, so this costs little.
 */
@Injectable()
export class TypeOrmUnitOfWork extends WebhookUnitOfWork {
  private readonly current = new AsyncLocalStorage<EntityManager>();
  private readonly serialized: boolean;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(@Inject(WEBHOOK_DATA_SOURCE) private readonly dataSource: DataSource) {
    super();
    this.serialized = dataSource.options.type !== 'postgres';
  }

  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.current.getStore()) return work();
    return this.exclusive(() => this.dataSource.transaction((manager) => this.current.run(manager, work)));
  }

  /** Runs `fn` with the open transaction's manager, or alone on the DataSource. */
  use<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const manager = this.current.getStore();
    if (manager) return fn(manager);
    return this.exclusive(() => fn(this.dataSource.manager));
  }

  get isPostgres(): boolean {
    return !this.serialized;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.serialized) return fn();
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
