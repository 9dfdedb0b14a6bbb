export * from './batch.js';
export * from './format.js';
export * from './names.js';
export * from './service.js';
export * from './single.js';
