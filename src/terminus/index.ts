// `nestjs-webhook-triggers/terminus`: the module's health for `@nestjs/terminus`. A separate entry so that the
// main one never loads terminus, an optional peer; the probes themselves are in the main entry
// (`WebhookTriggerProbes`), for hosts with a health endpoint of their own.
export { WebhookTriggerHealthIndicator } from './webhook-trigger.health-indicator.js';
