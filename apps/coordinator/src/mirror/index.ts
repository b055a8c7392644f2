/** The git mirror of the ledger and its audit routes. */
export { registerAuditRoutes } from './audit-http.js';
export { MirrorModule } from './mirror.module.js';
export { MirrorWorker } from './mirror.worker.js';
export { rebuildMirror } from './rebuild-mirror.js';
export { readCheckpoint } from './store/checkpoint.js';
