import { type CanActivate, type ExecutionContext, Inject, Injectable, UnauthorizedException } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SAMPLE_CONFIG } from '../tokens.js';
import type { SampleConfig } from '../config.js';

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time (both sides hashed to equal length). */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor(@Inject(SAMPLE_CONFIG) config: SampleConfig) {
    this.expected = sha256(config.adminToken);
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<IncomingMessage>();
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
    if (!match || !timingSafeEqual(sha256(match[1]), this.expected)) {
      throw new UnauthorizedException('Send the admin token as "Authorization: Bearer <ADMIN_TOKEN>"');
    }
    return true;
  }
}
