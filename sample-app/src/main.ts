// First: the OpenTelemetry SDK must be registered before the library's module takes its meter and tracer.
import './telemetry.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Client } from 'pg';
import { addWebhookKeyScheme } from '../../src/index.js';
import { AppModule } from './app.module.js';
import { ConfigError, ensureDatabaseDir, loadConfig, type SampleConfig } from './config.js';
import { DEMO_CREDITS, type DemoState, DemoSeeder } from './demo-seeder.js';

async function bootstrap(): Promise<void> {
  let config: SampleConfig;
  try {
    config = loadConfig(process.env);
    ensureDatabaseDir(config);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`Invalid configuration: ${e.message}\n`);
    process.exit(1);
  }

  // Several processes may start on one PostgreSQL database at once: migrations and demo seeding run one
  // process at a time, under a session advisory lock held from opening the database until seeded.
  const startupLock = config.databaseUrl !== undefined ? await lockStartup(config.databaseUrl) : null;
  if (config.role === 'worker') return startWorker(config, startupLock);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), { abortOnError: false });
  app.enableShutdownHooks();
  app.disable('x-powered-by');
  // The only form the app takes is the admin sign-in (one token): a few KB is plenty. Registered before
  // init, so Nest does not add its default urlencoded parser (100 kB) as well.
  app.useBodyParser('urlencoded', { limit: '4kb', extended: false });

  const document = SwaggerModule.createDocument(
    app,
    addWebhookKeyScheme(new DocumentBuilder())
      .setTitle('Webhook Triggers')
      .setDescription(
        'Start a bot run with POST …/trigger, then wait for its outputs with GET …/sync. Every call needs the trigger key in X-Key.',
      )
      .setOpenAPIVersion('3.0.3')
      .setVersion('1.0.0')
      .addServer(config.publicBaseUrl)
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', yamlDocumentUrl: 'openapi.yaml' });

  let demo: DemoState;
  try {
    await app.init(); // seeds the demo data (DemoSeeder, at module init)
    demo = app.get(DemoSeeder).state;
  } finally {
    await startupLock?.release();
  }
  await app.listen(config.port);
  printBanner(config, demo);
}

/**
 * A worker: the same module without an HTTP server. It runs bots from the queue, renews their leases,
 * recovers interrupted runs and dispatches runs that never reached the queue.
 */
async function startWorker(config: SampleConfig, startupLock: { release: () => Promise<void> } | null): Promise<void> {
  let app;
  try {
    app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { abortOnError: false });
  } finally {
    await startupLock?.release();
  }
  app.enableShutdownHooks();
  process.stdout.write(
    [
      '',
      `Webhook Triggers worker (WEBHOOK_ROLE=worker, pid ${process.pid}): running bots from the run queue, at most ${config.maxConcurrentRuns} at once`,
      `  Database:     ${redact(config.databaseUrl!)}`,
      `  Redis:        ${redact(config.redisUrl!)}   (run queue, cluster bus)`,
      '',
    ].join('\n') + '\n',
  );
}

/** Waits for, then holds, the sample app's startup lock on the PostgreSQL database. */
async function lockStartup(url: string): Promise<{ release: () => Promise<void> }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SELECT pg_advisory_lock(hashtext('nestjs-webhook-triggers:sample-app:startup'))`);
  } catch (e) {
    await client.end().catch(() => undefined);
    throw e;
  }
  // Ending the session releases the lock, also if the unlock query itself fails.
  return { release: () => client.end().catch(() => undefined) };
}

/** `a, b and c`: the banner's list of bots, from the registered ones. */
function inWords(ids: string[]): string {
  return ids.length < 2 ? (ids[0] ?? 'none') : `${ids.slice(0, -1).join(', ')} and ${ids[ids.length - 1]}`;
}

/** The URL without its password, for the banner. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

function printBanner(config: SampleConfig, demo: DemoState): void {
  const base = config.publicBaseUrl;
  const lines = [
    '',
    `Webhook Triggers sample app is listening on port ${config.port}`,
    `  Admin UI:     ${base}/admin   (sign in with the admin token; the JSON API takes it as a Bearer token)`,
    `  API docs:     ${base}/docs   (OpenAPI: ${base}/openapi.json)`,
    `  Database:     ${config.databaseUrl !== undefined ? redact(config.databaseUrl) : config.sqlitePath}`,
  ];
  if (config.redisUrl !== undefined)
    lines.push(`  Redis:        ${redact(config.redisUrl)}   (run queue, shared rate limits, cluster bus)`);
  lines.push(
    config.role === 'api'
      ? '  Role:         api (accepts triggers; bots run on workers: npm run start:worker)'
      : `  Role:         ${config.role} (accepts triggers and runs bots${config.redisUrl !== undefined ? ' from the run queue' : ''})`,
  );
  if (config.adminTokenGenerated)
    lines.push(`  Admin token:  ${config.adminToken}   (generated for this run; set ADMIN_TOKEN to keep one)`);
  else lines.push('  Admin token:  from ADMIN_TOKEN');
  const secret = config.keySecretSource;
  if (secret.kind === 'file' && secret.created) lines.push(`  Key secret:   generated and saved in ${secret.path}`);
  if (secret.kind === 'memory') lines.push('  Key secret:   generated in memory (the database is in memory too)');
  lines.push('');
  lines.push(
    demo.seeded
      ? `First start: seeded account "demo" with ${DEMO_CREDITS} credits, owning bots ${inWords(demo.bots)}.`
      : 'Demo data already present (not seeded again).',
  );
  if (!demo.trigger) {
    lines.push('The echo bot has no trigger; create one in the admin UI.');
  } else if (!demo.trigger.key) {
    lines.push(`Echo trigger URL: ${demo.trigger.url}`);
    lines.push('Its key cannot be shown (was WEBHOOK_KEY_SECRET changed?); rotate it in the admin UI to get a new one.');
  } else {
    const { url, key } = demo.trigger;
    lines.push(
      `Echo trigger URL: ${url}`,
      `Echo trigger key: ${key}`,
      'Try it:',
      `  curl -X POST ${url} -H 'X-Key: ${key}' -H 'Content-Type: application/json' -d '{"text":"hello"}'`,
      'then wait for the outputs with the invocation.id it returns:',
      `  curl ${url}/invocation/<invocation.id>/sync -H 'X-Key: ${key}'`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}

bootstrap().catch((e: unknown) => {
  new Logger('SampleApp').error(`Startup failed: ${e instanceof Error ? e.message : String(e)}`, e instanceof Error ? e.stack : undefined);
  process.exit(1);
});
