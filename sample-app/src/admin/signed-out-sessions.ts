import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { ADMIN_AUTH_OPTIONS, type AdminAuthOptions } from './admin-auth.options.js';

const hashOf = (session: string): string => createHash('sha256').update(session, 'utf8').digest('base64url');

/**
 * Sessions ended by sign-out before their time. A session cookie is a signed, stateless value (every node
 * accepts it), so clearing the cookie alone would leave a copy of it (a stolen or replayed cookie) valid until
 * its 12 h are up: sign-out records it here until then, and the guard refuses it. In this process, and in Redis
 * when the app has REDIS_URL, so that every node of a scaled-out app refuses it at once. Only a hash of the
 * session is kept. When Redis cannot answer, a session counts as ended (closed, not open).
 */
@Injectable()
export class SignedOutSessions implements OnModuleDestroy {
  private readonly logger = new Logger('AdminSignIn');
  private readonly local = new Map<string, number>();
  private readonly redis: Redis | undefined;
  private readonly prefix: string;

  constructor(@Inject(ADMIN_AUTH_OPTIONS) options: AdminAuthOptions) {
    this.prefix = `${options.redisKeyPrefix ?? 'sample-app:'}admin-signed-out:`;
    this.redis = options.redisUrl ? new Redis(options.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true }) : undefined;
    this.redis?.on('error', () => undefined); // reported where a call fails
  }

  /** Ends `session` until `expiresAt` (ms), when it would have ended by itself. */
  async end(session: string, expiresAt: number, now = Date.now()): Promise<void> {
    const ms = Math.ceil(expiresAt - now);
    if (ms <= 0) return;
    const hash = hashOf(session);
    this.prune(now);
    this.local.set(hash, expiresAt);
    try {
      await this.redis?.set(this.prefix + hash, '1', 'PX', ms);
    } catch (error) {
      // The cookie is still cleared and this node refuses the session; the others cannot be told.
      this.logger.warn(`Could not record a sign-out in Redis (${String(error)}); other nodes still accept that session`);
    }
  }

  async isEnded(session: string, now = Date.now()): Promise<boolean> {
    const hash = hashOf(session);
    const until = this.local.get(hash);
    if (until !== undefined && until > now) return true;
    if (!this.redis) return false;
    try {
      return (await this.redis.exists(this.prefix + hash)) === 1;
    } catch (error) {
      this.logger.warn(`Could not ask Redis whether an admin session was signed out (${String(error)}); refusing it`);
      return true;
    }
  }

  /** Drops the entries whose session has expired anyway, so the map holds at most 12 h of sign-outs. */
  private prune(now: number): void {
    for (const [hash, until] of this.local) if (until <= now) this.local.delete(hash);
  }

  async onModuleDestroy(): Promise<void> {
    await this.redis?.quit().catch(() => undefined);
  }
}
