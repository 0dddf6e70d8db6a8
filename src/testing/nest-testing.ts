import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { TESTING_PACKAGE_MISSING } from '../errors/webhook-trigger.messages.js';

/**
 * `@nestjs/testing`, loaded when a part of the kit needs it (a harness, `runBot`), so the kit imports without it (the
 * testing module in your own test module does not need it); missing, the error says to install it.
 */
export function nestTesting(): typeof import('@nestjs/testing') {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a dev dependency of the host, needed here only
    return require('@nestjs/testing') as typeof import('@nestjs/testing');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND') throw new WebhookConfigurationError(TESTING_PACKAGE_MISSING);
    throw error;
  }
}
