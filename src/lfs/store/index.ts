export type { LfsStore, RepositoryStore, SignedRequest, WriteResult, WriteFailure } from './types.js';
export { LocalStore, LocalRepositoryStore } from './local.js';
