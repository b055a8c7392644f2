/** What every part of the process shares: its log, its counters and the signing key store, provided by CoreModule. */
export { CoreModule, LOG } from './core.module.js';
export { type FleetGauges, Metrics, observeRequestLatency } from './metrics.js';
export { KEYS, SigningKeyStore } from './signing-keys.js';
