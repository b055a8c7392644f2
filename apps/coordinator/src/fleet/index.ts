/** What the nodes say about themselves: reports, last contacts, and the state derived from them. */
export { ContactLog } from './contact-log.js';
export { convergence, credentialState, lifecycleState, publishNodeStatus, type Outcome } from './fleet-state.js';
export { FleetModule } from './fleet.module.js';
export { loadNodeRecords, nodeNamesAfter, type NodeRecord } from './fleet.repository.js';
export { OutcomeRecorded } from './outcome-recorded.event.js';
