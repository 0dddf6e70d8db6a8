/** Name of the security scheme every webhook operation requires (the spec's `X-Key` header). */
export const WEBHOOK_KEY_SCHEME = 'X-Key';

/** What `addWebhookKeyScheme` needs of @nestjs/swagger's `DocumentBuilder` (typed here so the package stays optional). */
export interface WebhookKeySchemeTarget<Builder> {
  addApiKey(options: { type: 'apiKey'; in: 'header'; name: string; description: string }, name: string): Builder;
}

/**
 * Adds the webhook API's `X-Key` security scheme to your OpenAPI document, which every webhook operation
 * refers to:
 *
 * ```ts
 * const config = addWebhookKeyScheme(new DocumentBuilder().setTitle('My API')).build();
 * SwaggerModule.setup('docs', app, SwaggerModule.createDocument(app, config));
 * ```
 */
export function addWebhookKeyScheme<Builder extends WebhookKeySchemeTarget<Builder>>(builder: Builder): Builder {
  return builder.addApiKey(
    { type: 'apiKey', in: 'header', name: 'X-Key', description: "The trigger's key (header name is case-insensitive)" },
    WEBHOOK_KEY_SCHEME,
  );
}
