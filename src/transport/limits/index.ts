/** Per-client limits and adaptive admission: one path for every transport (transport/request.ts). */
export { clientId, addressKey, ipv6Prefix64, type ClientId } from './client-key.js';
export { TokenBuckets, DEFAULT_MAX_CLIENTS } from './rate.js';
export { InFlight, releaseOnClose, type Closable } from './concurrency.js';
export { Saturation, parsePressure, findPressureFile, type SaturationOptions } from './pressure.js';
export { ClientLimits, refusalMessage, refusalOutcome, type ClassLimits, type ClientLimitOptions, type LimitRefusal, type LimitVerdict, type RefusalReason, type RequestWeight } from './client-limits.js';
export { COST, COST_HEADER, CostScan, requestCost } from './cost.js';
export { ProgressDeadline, watchSocket, socketFlow, stalled, markStalled, stallReason, tickMs, PROGRESS_TIMEOUT, DEFAULT_PROGRESS_TIMEOUT, type Flow, type Stall, type StallDirection } from './progress.js';
