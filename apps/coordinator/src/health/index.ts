/** Liveness, readiness and the metrics scrape. */
export { HealthModule } from './health.module.js';
