/**
 * Git LFS served beside git: the batch and locking APIs over HTTP, the
 * basic transfer, `git-lfs-authenticate` and `git-lfs-transfer` over SSH,
 * behind one `LfsService` the transports hand requests to.
 */
export { LfsService, DEFAULT_MAX_BATCH_OBJECTS, DEFAULT_TOKEN_TTL, MAX_JSON_BYTES, type LfsOptions, type ObjectAnswer } from './service.js';
export { parseLfsRoute, serveLfsHttp, parseRange, type LfsRoute, type LfsHttpExchange, type LfsHttpLog } from './http.js';
export type { LfsGate, LfsDeny, LfsAdmission, LfsServiceName } from './exchange.js';
export { TokenSigner, covers, type TokenClaims, type LfsOperation } from './token.js';
export { LockStore, isLockId, isLockPath, type Lock } from './locks.js';
export { isOid, isSize, oidPath, LFS_MEDIA_TYPE } from './oid.js';
export * from './store/index.js';
export { parseLfsExec, serveLfsSsh, serveLfsTransfer, authenticateAnswer, type LfsExec, type LfsSshSession, type LfsSshResult } from './ssh.js';
