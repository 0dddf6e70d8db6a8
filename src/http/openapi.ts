import type { DocumentBuilder } from '@nestjs/swagger';

/** Name of the security scheme every webhook operation requires (the spec's `X-Key` header). */
export const WEBHOOK_KEY_SCHEME = 'X-Key';

/**
 * Adds the webhook API's `X-Key` security scheme to your OpenAPI document, which every webhook operation
 * refers to:
 *
 * ```ts
 * const config = addWebhookKeyScheme(new DocumentBuilder().setTitle('My API')).build();
 * SwaggerModule.setup('docs', app, SwaggerModule.createDocument(app, config));
 * ```
 */
export function addWebhookKeyScheme(builder: DocumentBuilder): DocumentBuilder {
  return builder.addApiKey(
    { type: 'apiKey', in: 'header', name: 'X-Key', description: "The trigger's key (header name is case-insensitive)" },
    WEBHOOK_KEY_SCHEME,
  );
}
