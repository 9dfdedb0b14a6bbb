/** Repository lifecycle and what tells the world about it: webhooks. */
export { Webhooks, checkWebhookUrl, type WebhookOptions, type WebhookTarget, type PushEvent, type WebhookStats, type AttemptResult } from './webhooks.js';
