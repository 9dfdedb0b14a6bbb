export * from './batch.js';
export * from './format.js';
export * from './names.js';
export * from './service.js';
export * from './single.js';
export * from './options.js';
export * from './filter.js';
export * from './support.js';
