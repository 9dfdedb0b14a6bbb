/**
 * gitwire's library surface: the transports, the stdio upload-pack the
 * CLI uses, the cat-file engine, and the building blocks beneath.
 */
export { uploadPack, type UploadPackOptions, type UploadPackResult } from './protocol/upload-pack.js';
export { receivePack, type ReceivePackOptions, type ReceivePackResult, type PushInfo, type PushUpdate, type PushDecision, type PushRefResult } from './protocol/receive-pack.js';
export { RefTransaction, type RefEdit, type Expected, type Change, type RefStore, type RefUpdate } from './repo/refs/index.js';
export { stdioUploadPack } from './transport/stdio.js';
export { services, type ServiceName } from './protocol/service.js';
export { createHttpHandler, OUTCOMES, type HttpOptions, type ServeHooks, type RequestInfo, type RequestLog, type Outcome, type Deny, type NextFunction } from './transport/http.js';
export type { ServePushInfo, PushHookOptions, PushHooks, PushLog } from './transport/http-push.js';
export type { Limits } from './protocol/limits.js';
export { parseBasicAuth, type BasicCredentials } from './transport/auth/basic.js';
export { createMetrics, type Metrics, type MetricsOptions } from './transport/metrics.js';
export { Health } from './transport/health.js';
export { createDaemonServer, parseDaemonRequest, type DaemonOptions } from './transport/daemon.js';
export { startServer, type ServeOptions, type RunningServer } from './transport/server.js';
export { Webhooks, checkWebhookUrl, type WebhookOptions, type WebhookTarget, type PushEvent, type WebhookStats, type AttemptResult } from './admin/index.js';
export { createSshServer, KeyDir, keyDirAuthenticate, rulesAuthorize, loadHostKey, fingerprint, DEFAULT_SSH_LIMITS, type SshOptions, type SshAuthInfo, type SshLimits, type HostKey, sshCommands, type SshCommandOptions, type SshCommandRequest, type SshCommandAnswer } from './transport/ssh/index.js';
export { PackLimiter } from './transport/admission.js';
export { ClientLimits, Saturation, clientId, refusalMessage, COST_HEADER, type ClientLimitOptions, type ClassLimits, type SaturationOptions, type ClientId, type LimitVerdict } from './transport/limits/index.js';
export { PackCache, type PackCacheOptions, type PackCacheStats } from './pack/cache.js';
export { DirectoryStore, type PackCacheStore, type StoredPack, type PackSpool } from './pack/cache.js';
export { resolveUnderRoot } from './transport/paths.js';
export { ObjectService, BatchEngine, NameResolver } from './catfile/index.js';
export { Repository } from './repo/repository.js';
export { createRepository, deleteRepository, pushToCreate, CreationBudget, type CreateOptions, type Created, type DeleteOptions, type PushToCreateOptions } from './admin/index.js';
export { ERROR_CODES, GitwireError, type ErrorCode } from './errors.js';
export * as pktline from './pktline/index.js';
export { RepositoryPool, type PoolOptions, type Lease } from './repo/pool.js';
export { useSpawnHelper, stopSpawnHelper, spawnChild, type Child } from './util/spawn.js';
export { createCoordinator, LocalCoordinator, type Coordinator, type CoordinationStatus, type SlotLease, type RedisCoordinatorOptions } from './cluster/index.js';
export { LfsService, LocalStore, LocalRepositoryStore, LockStore, TokenSigner, type LfsOptions, type LfsStore, type RepositoryStore, type SignedRequest, type WriteResult, type LfsServiceName } from './lfs/index.js';
export { forkRepository, type ForkOptions, type ForkResult } from './admin/fork.js';
export { renameRepository, type RenameOptions, type RenameResult } from './admin/rename.js';
