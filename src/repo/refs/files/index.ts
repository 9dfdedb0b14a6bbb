export { FilesRefStore, RefSnapshot } from './store.js';
export { PackedRefs } from './packed.js';
export { RefTransaction } from './transaction.js';
export { MAX_LOOSE_REF_SIZE } from './loose.js';
