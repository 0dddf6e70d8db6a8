// The public API. Everything a host uses or implements is named here; explorers, provider factories and
// internal tokens stay private. The Redis parts are a separate entry, `nestjs-webhook-triggers/redis`.
export { WebhookTriggerModule } from './webhook-trigger.module.js';
export type {
  WebhookTriggerModuleAsyncOptions,
  WebhookTriggerModuleForRootOptions,
  WebhookTriggerOptionsFactory,
} from './webhook-trigger.module-definition.js';
export type { WebhookTriggerModuleExtras } from './webhook-trigger.extras.js';
export { InjectWebhookTriggerOptions, getWebhookTriggerOptionsToken } from './options/module.constants.js';
export type {
  WebhookTriggerModuleOptions,
  ResolvedWebhookTriggerOptions,
  WebhookRateLimit,
  WebhookTriggerDatabaseOptions,
  WebhookTriggerRedisOptions,
  WebhookTriggerRole,
} from './options/webhook-trigger-options.interface.js';

export {
  WebhookTriggerError,
  WebhookConfigurationError,
  WebhookAdminInputError,
  WebhookAdminConflictError,
  WebhookAdminForbiddenError,
  WebhookAdminNotFoundError,
  WebhookAdminUnavailableError,
  IdempotencyKeyTakenError,
  DatabaseConnectionLostError,
  InvocationAlreadyFinishedError,
} from './errors/webhook-trigger.errors.js';

// For receivers of the signed completion callbacks (Standard Webhooks). The signer and the sender stay internal.
export { WebhookVerificationError } from './errors/webhook-trigger.errors.js';
export type { WebhookVerificationFailure } from './errors/webhook-trigger.errors.js';
export { verifyWebhookSignature } from './callbacks/standard-webhooks.js';
export type { VerifyWebhookOptions, WebhookHeadersInput, WebhookSecrets } from './callbacks/standard-webhooks.js';
export { WebhookSignatureGuard } from './callbacks/webhook-signature.guard.js';
export type { WebhookSecretSource, WebhookSignatureGuardOptions } from './callbacks/webhook-signature.guard.js';

export { WebhookBot, type WebhookBotClass } from './bots/webhook-bot.decorator.js';
export { WebhookBotHost } from './bots/webhook-bot-host.js';
export type { BotContext, BotInputs, BotOutput, WebhookBotOptions } from './bots/bot.types.js';

export { WEBHOOK_EVENTS, CALLBACK_DISABLED_EVENT } from './events/invocation.events.js';
export type { InvocationEvent, CallbackDisabledEvent } from './events/invocation.events.js';

export { WebhookTriggersAdmin } from './admin/webhook-triggers.admin.js';
export { LISTED_OUTPUTS_MAX, RECENT_RUNS_CAP, DELIVERIES_LISTED } from './admin/admin-views.js';
export type {
  BotView,
  BotSummary,
  TriggerView,
  TriggerListItem,
  TriggerWithKey,
  TriggerWithNewKey,
  TriggerKeyView,
  CreatedTriggerKeyView,
  CreateTriggerKeyInput,
  RotatedTriggerKey,
  InvocationView,
  InvocationDetail,
  TimelineStep,
  HistoryFilter,
  CreateTriggerInput,
  CallbackView,
  CallbackInput,
  DeliveryView,
  AccountCredits,
  RequestSigningView,
  RotatedSigningSecret,
  SigningSecretView,
  SigningSecretStatus,
  OverviewView,
  OverviewBucketView,
  OverviewWindow,
  PercentilesView,
} from './admin/admin-views.js';
export { WebhookTriggerAdminModule } from './admin/webhook-trigger-admin.module.js';
export { isCrossSiteRequest, requestOrigin } from './admin/request-origin.js';
export { AuditContext } from './admin/audit/audit-context.js';
export { AUDIT_ACTIONS, AUDIT_PAGE_MAX, AUDIT_PAGE_SIZE } from './admin/audit/audit-views.js';
export type { AuditAction, AuditEntryView, AuditFilter, AuditPage } from './admin/audit/audit-views.js';
export { AuditLog } from './persistence/audit-log.js';
export type { AuditDetails, AuditEntry, AuditQuery } from './persistence/audit-log.js';
export type {
  AdminGuard,
  WebhookTriggerAdminOptions,
  WebhookTriggerAdminAsyncOptions,
  WebhookTriggerAdminSettings,
  WebhookTriggerAdminMount,
} from './admin/admin-options.js';

// Health: whether this node can serve (docs/observability.md); `nestjs-webhook-triggers/terminus` maps it to @nestjs/terminus.
export { WebhookTriggerProbes, PROBE_TIMEOUT_MS } from './lifecycle/webhook-trigger-probes.js';
export type { ProbeResult, WebhookTriggerHealth } from './lifecycle/webhook-trigger-probes.js';
export type { ServiceCheck } from './health/service-check.js';
export type { WorkersSeen } from './runs/bot-runner.js';

export { WebhookStorage } from './persistence/webhook-storage.js';
export { InMemoryWebhookStorage } from './persistence/memory/in-memory-webhook-storage.js';
export type { AcceptOutcome } from './persistence/webhook-storage.js';
export { TriggerRepository } from './persistence/trigger.repository.js';
export type { AddKeyOutcome, AddKeyRules } from './persistence/trigger.repository.js';
export { InvocationRepository } from './persistence/invocation.repository.js';
export type { HistoryQuery, LostRun } from './persistence/invocation.repository.js';
export { CreditLedger } from './persistence/credit-ledger.js';
export { CreditAccounts } from './persistence/credit-accounts.js';
export { WebhookUnitOfWork } from './persistence/unit-of-work.js';
export { CallbackStore } from './persistence/callback-store.js';
export { RunOverview, FINISHED_STATUSES } from './persistence/run-overview.js';
export type { FinishedStatus, OverviewBucketRecord, OverviewQuery, Percentiles, RunOverviewRecord } from './persistence/run-overview.js';
export type { DueDelivery, NewCallback } from './persistence/callback-store.js';
export { SigningSecretStore } from './persistence/signing-secret-store.js';
export type { WebhookTransaction } from './persistence/unit-of-work.js';
export { INVOCATION_STATUSES, TERMINAL_STATUSES, REQUEST_SIGNING_MODES } from './persistence/records.js';
export type {
  TriggerRecord,
  TriggerKeyRecord,
  InvocationRecord,
  InvocationStatus,
  InvocationError,
  NewInvocation,
  InvocationTransition,
  CallbackRecord,
  DeliveryRecord,
  AttemptResult,
  RequestSigning,
  SigningSecretRecord,
} from './persistence/records.js';
export {
  WEBHOOK_TRIGGER_ENTITIES,
  WebhookAccountEntity,
  WebhookTriggerEntity,
  WebhookTriggerKeyEntity,
  WebhookInvocationEntity,
} from './persistence/typeorm/entities.js';
export { WEBHOOK_TRIGGER_MIGRATIONS } from './persistence/typeorm/migrations/index.js';

export { BotRunner } from './runs/bot-runner.js';
export type { DispatchedRun } from './runs/bot-runner.js';
export { ClusterBus } from './cluster/cluster-bus.js';
export type { RunChange } from './cluster/cluster-bus.js';
export { RateLimitStorage } from './rate-limits/rate-limit.storage.js';
export { Clock, SYSTEM_CLOCK, type ClockTimer } from './time/clock.js';
export { CallbackTransport, HttpCallbackTransport } from './callbacks/callback-transport.js';
export type { CallbackRequest, CallbackResult, CallbackOutcome } from './callbacks/callback-sender.js';
export type { Admission, AdmissionRequest, RateLimitRecord, RateLimitWindow } from './rate-limits/rate-limit.storage.js';
export type { WebhookErrorBody } from './http/webhook-exception.filter.js';
export { addWebhookKeyScheme, WEBHOOK_KEY_SCHEME } from './http/openapi.js';
export type { CallbackEvent, DeliveryStatus } from './persistence/records.js';
/** The names of the module's span attributes and spans (docs/observability.md, Traces), for a host's queries and tests. */
export { TRACE_ATTRIBUTES, SPAN_NAMES } from './telemetry/trace-attributes.js';
