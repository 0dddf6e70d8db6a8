import { Inject } from '@nestjs/common';

/** Injection token of the resolved options (defaults applied, validated). */
export const RESOLVED_OPTIONS = Symbol('WEBHOOK_TRIGGER_RESOLVED_OPTIONS');
/** Injection token of the extras the module was imported with (wiring; checked with the options). */
export const WEBHOOK_TRIGGER_EXTRAS = Symbol('WEBHOOK_TRIGGER_EXTRAS');
/** Logger context of every part of the module (bots log under `WebhookBot:<id>:<invocation>`). */
export const LOG_CONTEXT = 'WebhookTriggerModule';

/** Token of the resolved options, for `@Inject()`. */
export const getWebhookTriggerOptionsToken = (): symbol => RESOLVED_OPTIONS;
/** Injects the resolved `ResolvedWebhookTriggerOptions`. */
export const InjectWebhookTriggerOptions = (): ParameterDecorator & PropertyDecorator => Inject(RESOLVED_OPTIONS);
