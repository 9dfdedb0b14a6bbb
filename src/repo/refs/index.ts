export * from './ref.js';
export * from './names.js';
export * from './ref-store.js';
export * from './transaction.js';
export * from './open.js';
export * from './files/index.js';
export * from './reftable/index.js';
export * from './hook.js';
