export * from './codec.js';
export * from './reader.js';
export * from './writer.js';
export * from './sink.js';
