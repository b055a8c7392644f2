/** The read models the ledger is projected into, their queries and their rebuild. */
export { ProjectionsModule } from './projections.module.js';
export { rebuildProjections } from './rebuild.js';
