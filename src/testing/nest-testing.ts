import type { Provider } from '@nestjs/common';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { TESTING_MISSING_PROVIDER, TESTING_PACKAGE_MISSING } from '../errors/webhook-trigger.messages.js';

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

/**
 * Compiles the kit's testing module. When Nest cannot build a bot or provider the spec gave, for want of a dependency,
 * its error (kept whole: its class, its text) gets the kit's fix after it, naming `where`'s providers: Nest's own
 * advice is to edit the module that lacks it, which is the kit's.
 */
export async function compileTestingModule(
  metadata: Parameters<typeof import('@nestjs/testing').Test.createTestingModule>[0],
  given: Provider[],
  where: string,
): Promise<import('@nestjs/testing').TestingModule> {
  try {
    return await nestTesting().Test.createTestingModule(metadata).compile();
  } catch (error) {
    throw withProvidersFix(error, given, where);
  }
}

function withProvidersFix(error: unknown, given: Provider[], where: string): unknown {
  // Nest's UnknownDependenciesException, known by its name and fields: it is not exported from @nestjs/core's root.
  if (!(error instanceof Error) || error.constructor.name !== 'UnknownDependenciesException') return error;
  const { type, context } = error as Error & { type?: unknown; context?: { name?: unknown } };
  const missing = nameOf(context?.name);
  // An `import type` (the dependency is undefined or Object at run time) is not a missing provider: Nest says so.
  if (typeof type !== 'string' || !missing || missing === 'Object' || !given.some((p) => namesOf(p).includes(type))) return error;
  // The stack is read first: V8 writes it out on first read, with the message of that moment.
  const { message, stack } = error;
  error.message = `${message}\n\n${TESTING_MISSING_PROVIDER(type, missing, where)}`;
  if (stack?.includes(message)) error.stack = stack.replace(message, () => error.message);
  return error;
}

function nameOf(token: unknown): string | undefined {
  if (typeof token === 'function') return token.name || undefined;
  if (typeof token === 'string') return token;
  if (typeof token === 'symbol') return token.toString();
  return undefined;
}

/** The names Nest may call a provider by: its class, or its token and the class it is built from. */
function namesOf(provider: Provider): string[] {
  if (typeof provider === 'function') return [provider.name];
  const names = [nameOf(provider.provide)];
  if ('useClass' in provider) names.push(nameOf(provider.useClass));
  return names.filter((name): name is string => name !== undefined);
}
