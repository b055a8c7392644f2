import { Module } from '@nestjs/common';
import { MirrorModule } from '../mirror/index.js';
import { HealthController } from './health.controller.js';

/** Liveness, readiness and the Prometheus scrape. */
@Module({
  imports: [MirrorModule],
  controllers: [HealthController],
})
export class HealthModule {}
