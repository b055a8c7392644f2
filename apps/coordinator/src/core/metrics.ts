import { Injectable } from '@nestjs/common';

/** Process-local Prometheus counters; ledger position and similar gauges are read at scrape time. */
@Injectable()
export class Metrics {
  polls = 0;
  polls304 = 0;
  /** Polls answered from this replica's memory, and polls that went to the database. */
  pollCacheHits = 0;
  pollCacheMisses = 0;
  publishes = 0;
  reports = 0;

  render(gauges: Record<string, number>): string {
    const lines = [
      '# TYPE florete_bundle_polls_total counter',
      `florete_bundle_polls_total ${this.polls}`,
      '# TYPE florete_bundle_polls_not_modified_total counter',
      `florete_bundle_polls_not_modified_total ${this.polls304}`,
      '# TYPE florete_poll_cache_hits_total counter',
      `florete_poll_cache_hits_total ${this.pollCacheHits}`,
      '# TYPE florete_poll_cache_misses_total counter',
      `florete_poll_cache_misses_total ${this.pollCacheMisses}`,
      '# TYPE florete_publishes_total counter',
      `florete_publishes_total ${this.publishes}`,
      '# TYPE florete_reports_total counter',
      `florete_reports_total ${this.reports}`,
    ];
    for (const [name, value] of Object.entries(gauges)) lines.push(`# TYPE ${name} gauge`, `${name} ${value}`);
    return `${lines.join('\n')}\n`;
  }
}
