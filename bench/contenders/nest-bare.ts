// The framework floor: one NestJS route of the same shape as the trigger endpoint, on Express or on
// Fastify, with Nest's default JSON body parser and nothing else (no guard, no database).
import 'reflect-metadata';
import { Body, Controller, HttpCode, type INestApplication, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceReady, childConfig, dieOnUnhandled, serveRpc } from '../shared.js';

interface NestBareConfig {
  adapter: 'express' | 'fastify';
}

@Controller('webhooks')
class BareController {
  @Post(':triggerId/trigger')
  @HttpCode(200)
  trigger(@Param('triggerId') _triggerId: string, @Body() _inputs: Record<string, unknown>): { success: true; invocation: { id: string } } {
    return { success: true, invocation: { id: `inv_${randomBytes(16).toString('base64url')}` } };
  }
}

@Module({ controllers: [BareController] })
class BareModule {}

async function main(): Promise<void> {
  dieOnUnhandled('nest-bare');
  const { adapter } = childConfig<NestBareConfig>();
  const logger = ['error', 'warn'] as const;
  const app =
    adapter === 'fastify'
      ? await NestFactory.create<INestApplication<Server>>(BareModule, new FastifyAdapter(), { logger: [...logger] })
      : await NestFactory.create<INestApplication<Server>>(BareModule, { logger: [...logger] });
  await app.listen(0, '127.0.0.1');
  serveRpc({});
  const port = (app.getHttpServer().address() as AddressInfo).port;
  announceReady({ port, triggers: { echo: { id: 'trg_bare', key: 'unused' } } });
}

void main();
