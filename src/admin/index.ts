/** Repository lifecycle (create, delete, push-to-create, creation budgets) and what tells the world about pushes: webhooks. */
export { createRepository, DEFAULT_INITIAL_BRANCH, type CreateOptions, type Created } from './create.js';
export { deleteRepository, type DeleteOptions } from './delete.js';
export { pushToCreate, type PushToCreateOptions, type CreateRefusal } from './push-to-create.js';
export { CreationBudget, DEFAULT_CREATES_PER_MINUTE } from './budget.js';
export { newRepositoryName, newRepositoryPath, MAX_DEPTH, MAX_NAME_BYTES } from './names.js';
export { Webhooks, checkWebhookUrl, type WebhookOptions, type WebhookTarget, type PushEvent, type WebhookStats, type AttemptResult } from './webhooks.js';
