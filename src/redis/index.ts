// `nestjs-webhook-triggers/redis`: the parts for several processes sharing one Redis. A separate entry so
// that hosts in one process never load Redis code (nor need `ioredis` or `bullmq` installed).
export { RedisRateLimitStorage } from './redis-rate-limit.storage.js';
export { RedisClusterBus } from './redis-cluster.bus.js';
export { BullMqBotRunner } from './bullmq.runner.js';
export { WEBHOOK_RUN_QUEUE } from './bullmq-run-queue.js';
