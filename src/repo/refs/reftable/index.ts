export { ReftableRefStore, ReftableSnapshot, isPerWorktreeRef, worktreeHeadSymref } from './store.js';
export { Stack, StackView } from './stack.js';
export { Table } from './table.js';
export { writeTable, logKey, type RefRecord, type LogRecord } from './writer.js';
export { autoCompact, suggestSegment } from './compact.js';
export { writeOptionsOf, type WriteOptions } from './transaction.js';
export { RefValue, LogValue } from './basics.js';
