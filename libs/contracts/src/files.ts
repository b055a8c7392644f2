/**
 * The contracts of the files retectl reads and writes: the rete's YAML, the artifacts compiled from it,
 * a node's local set and its digests, and the trust document an agent keeps. Importing
 * `#contracts/files` builds only these schemas, not the coordinator API's, which a compile never
 * uses; `#contracts` exports them all.
 */
export * from './plain.js';
export * from './primitives.schema.js';
export * from './host.schema.js';
export * from './artifacts.schema.js';
export * from './rete.schema.js';
export * from './rollout.schema.js';
export * from './local-set.schema.js';
export * from './trust.schema.js';
