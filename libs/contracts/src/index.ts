export * from './primitives.schema.js';
export * from './host.schema.js';
export * from './api.schema.js';
export * from './bundle.schema.js';
export * from './artifacts.schema.js';
export * from './agent.schema.js';
export * from './rete.schema.js';
export * from './lifecycle.schema.js';
