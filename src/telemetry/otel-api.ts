/**
 * `@opentelemetry/api`, the optional peer through which the module reports traces and metrics, when the host
 * has it installed; otherwise undefined, and the module's telemetry is skipped (nothing loaded, nothing paid).
 * Installed without an SDK registered, the API's own no-op tracer and meter answer. Only this file names the
 * package at run time; everywhere else imports its types with `import type`.
 */
export type OtelApi = typeof import('@opentelemetry/api');

function loadOtelApi(): OtelApi | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer, loaded only if installed
    return require('@opentelemetry/api') as OtelApi;
  } catch {
    return undefined;
  }
}

/** The host's `@opentelemetry/api`, or undefined when it is not installed. */
export const otelApi: OtelApi | undefined = loadOtelApi();

/** The instrumentation scope the module's tracer and meter are named after. */
export const INSTRUMENTATION_SCOPE = 'nestjs-webhook-triggers';
