/** Rollouts driven wave by wave on what the fleet reports. */
export { RolloutsModule } from './rollouts.module.js';
