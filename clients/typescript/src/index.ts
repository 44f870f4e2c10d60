export { createMlsClient, type MlsClient, type MlsClientOptions } from './client.js'
export { multipartBody } from './multipart.js'
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders, type WebhookMessage } from './webhooks.js'
export type * from './schema.js'
