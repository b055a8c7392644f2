import { Injectable } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { COORDINATOR_VERSION } from './build-info.js';

/** The fleet as the scrape reports it; read by the health folder (fleet-gauges.ts) and set here. */
export interface FleetGauges {
  /** Every node the coordinator knows, by lifecycle and convergence (`unpublished`: nothing published for it). */
  readonly nodes: readonly { lifecycle: string; convergence: string; count: number }[];
  /** Enrolled nodes by the age of their last contact (a bucket label of CONTACT_AGE_BUCKETS, `older` or `never`). */
  readonly contactAge: readonly { age: string; count: number }[];
  /** Enrolled nodes by the agent version they last said they run (`unknown`: never said). */
  readonly agentVersions: readonly { version: string; count: number }[];
}

/** The gauges read from the database at scrape time: every replica reports the same ledger, mirror and fleet. */
export interface ScrapeGauges {
  readonly ledgerPosition: number;
  readonly mirrorPosition: number;
  readonly mirrorLagPositions: number;
  /** Age of the oldest ledger event the mirror has not consumed yet; 0 when it is current. */
  readonly mirrorLagSeconds: number;
  readonly mirrorWriting: boolean;
  /** Seconds since the newest signed checkpoint; NaN before the first one. */
  readonly checkpointAgeSeconds: number;
}

/** This process's own running totals, read at scrape time: counters, reset when the process restarts. */
export interface ScrapeCounts {
  readonly mirrorCommits: number;
  readonly mirrorPushFailures: number;
}

/** Ready: what the database says at this scrape. Not ready: this process's counts only. */
export type ScrapeReadings =
  | { readonly ready: true; readonly gauges: ScrapeGauges; readonly counts: ScrapeCounts; readonly fleet: FleetGauges }
  | { readonly ready: false; readonly counts: ScrapeCounts };

/** The two routes whose latency is a histogram of its own, by method and Fastify route. */
const POLL_ROUTE = 'GET /v1/nodes/:node/bundle';
const PUBLISH_ROUTE = 'POST /v1/publishes';

/** Seconds. A 304 poll answers in well under a millisecond when nothing waits; a publish of a large tree takes seconds. */
const POLL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const PUBLISH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const NOTIFICATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Poll latencies kept before they are observed into the histogram together (PollLatencies). */
const POLL_LATENCY_BATCH = 4096;

/**
 * The poll latency histogram's observations, kept in a buffer and observed into it together: at each
 * scrape (the histogram's collect) and whenever the buffer fills. prom-client's observe validates
 * and hashes the labels on every call, and on the poll path, its code and data out of the
 * processor's caches between polls, that was a measurable share of a 304 (bench/README.md,
 * bench:poll); a buffered latency costs two array writes, and the observations made together stay
 * in the caches. The figures a scrape reads are the same.
 */
export class PollLatencies {
  private readonly seconds = new Float64Array(POLL_LATENCY_BATCH);
  private readonly statuses = new Uint16Array(POLL_LATENCY_BATCH);
  private kept = 0;
  private readonly labels = new Map<number, { status: string }>();

  constructor(private readonly histogram: Histogram<'status'>) {}

  add(status: number, seconds: number): void {
    this.seconds[this.kept] = seconds;
    this.statuses[this.kept] = status;
    if (++this.kept === POLL_LATENCY_BATCH) this.observe();
  }

  /** Observes every latency kept into the histogram. */
  observe(): void {
    // Emptied first: a latency the histogram refused (it throws on one that is not finite) must not
    // leave the buffer full for every poll after it.
    const kept = this.kept;
    this.kept = 0;
    for (let i = 0; i < kept; i++) {
      const status = this.statuses[i];
      let labels = this.labels.get(status);
      if (!labels) this.labels.set(status, (labels = { status: String(status) }));
      this.histogram.observe(labels, this.seconds[i]);
    }
  }
}

/**
 * The coordinator's Prometheus metrics, one registry per coordinator (so several in one test process
 * never share counts). Controllers count polls, 304s, publishes and reports in the plain fields
 * below; the registry reads them at scrape time. Request latencies come from one Fastify hook
 * ({@link observeRequestLatency}), so no route has to time itself.
 */
@Injectable()
export class Metrics {
  polls = 0;
  polls304 = 0;
  publishes = 0;
  /** Publishes answered as the repeat of the body last published, without deciding them. */
  repeatedPublishes = 0;
  /** Bundles signed as their node fetched them (a 200 on the poll path). */
  bundlesSigned = 0;
  reports = 0;
  /** How many watches this replica holds now; set by the poll route. */
  watchesHeld: () => number = () => 0;
  /** The ledger position of this replica's in-memory head buckets, -1 while it holds none; set by the projections module. */
  headBucketsPosition: () => number = () => -1;
  /** Held watches as they ended: woken by a change, expired (304), refused (503 beyond the limit or stopping). */
  readonly watches = { woken: 0, expired: 0, refused: 0 };
  /**
   * Requests that were held as watches: their time is the wait, not the work, so the poll latency
   * histogram leaves them out.
   */
  readonly held = new WeakSet<object>();

  readonly registry = new Registry();

  private readonly pollSeconds: PollLatencies;
  private readonly publishSeconds: Histogram<'status'>;
  /** Polls answered from memory: a field, as the poll path's counts are (read at scrape time). */
  private cacheHits = 0;
  private readonly cacheMisses: Counter;
  private readonly notificationLag: Histogram;
  private readonly gauges: Record<keyof ScrapeGauges, Gauge>;
  private readonly counts: Record<keyof ScrapeCounts, Counter>;
  private readonly nodes: Gauge<'lifecycle' | 'convergence'>;
  private readonly contactAge: Gauge<'age'>;
  private readonly agentVersions: Gauge<'version'>;
  private readonly buildInfo: Gauge<'version' | 'node_version' | 'database'>;
  private readonly ready: Gauge;

  /**
   * For the in-process poll cache: a poll answered from memory is a hit, one that had to ask the
   * database (an unknown credential or node, a cache not trusted while its notifications are down)
   * a miss.
   */
  readonly pollCache = {
    hit: (): void => {
      this.cacheHits++;
    },
    miss: (): void => this.cacheMisses.inc(),
  };

  /** For the cache's notification listener: `received(seconds)` with how long one of its pings took to come back. */
  readonly notifications = {
    received: (lagSeconds: number): void => this.notificationLag.observe(Math.max(0, lagSeconds)),
  };

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const fromField = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    fromField('florete_bundle_polls_total', 'Bundle polls received (GET /v1/nodes/{node}/bundle), whatever their answer.', () => this.polls);
    fromField('florete_bundle_polls_not_modified_total', 'Bundle polls answered 304: the node already holds its current version.', () => this.polls304);
    fromField('florete_publishes_total', 'Publishes that stamped at least one node (answered 201).', () => this.publishes);
    fromField(
      'florete_publish_repeats_total',
      'Publishes of the request body this replica published last, with nothing appended since, answered without deciding them again (200, nothing changed).',
      () => this.repeatedPublishes,
    );
    fromField(
      'florete_bundles_signed_total',
      'Bundles signed as their node fetched them (polls answered 200): about one per node per new version or key change; a publish signs none.',
      () => this.bundlesSigned,
    );
    fromField('florete_reports_total', 'Agent reports accepted.', () => this.reports);
    fromField('florete_watches_woken_total', 'Held bundle watches answered because their node or credential changed.', () => this.watches.woken);
    fromField('florete_watches_expired_total', 'Held bundle watches whose wait ran out (answered 304).', () => this.watches.expired);
    fromField(
      'florete_watches_refused_total',
      'Bundle watches refused with 503 and Retry-After: beyond FLORETE_WATCH_LIMIT, or while the replica stops.',
      () => this.watches.refused,
    );
    const fromReading = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    fromReading('florete_watches_held', 'Bundle watches (polls with Prefer: wait) this replica holds open now.', () => this.watchesHeld());
    fromReading(
      'florete_head_buckets_position',
      'Ledger position of the head bucket digests this replica keeps in memory for GET /v1/heads/buckets; -1 before the first was asked for.',
      () => this.headBucketsPosition(),
    );
    const pollSeconds: PollLatencies = new PollLatencies(
      new Histogram({
        name: 'florete_poll_duration_seconds',
        help: 'Time to answer a bundle poll, by HTTP status.',
        labelNames: ['status'],
        buckets: POLL_BUCKETS,
        registers,
        collect() {
          pollSeconds.observe();
        },
      }),
    );
    this.pollSeconds = pollSeconds;
    this.publishSeconds = new Histogram({
      name: 'florete_publish_duration_seconds',
      help: 'Time to answer POST /v1/publishes, by HTTP status.',
      labelNames: ['status'],
      buckets: PUBLISH_BUCKETS,
      registers,
    });
    fromField('florete_poll_cache_hits_total', 'Polls answered from the in-process poll cache.', () => this.cacheHits);
    this.cacheMisses = new Counter({
      name: 'florete_poll_cache_misses_total',
      help: 'Polls the poll cache could not answer, sent to the database.',
      registers,
    });
    this.notificationLag = new Histogram({
      name: 'florete_notification_lag_seconds',
      help: "Time a notification takes to reach this replica's poll-cache listener, measured by the listener's own ping every 500 ms (PostgreSQL only).",
      buckets: NOTIFICATION_BUCKETS,
      registers,
    });
    const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
    this.gauges = {
      ledgerPosition: gauge('florete_ledger_position', 'Position of the newest ledger event.'),
      mirrorPosition: gauge('florete_mirror_position', 'Last ledger position the git audit mirror has consumed.'),
      mirrorLagPositions: gauge('florete_mirror_lag_positions', 'Ledger events not yet in the git audit mirror.'),
      mirrorLagSeconds: gauge('florete_mirror_lag_seconds', 'Age of the oldest ledger event not yet in the git audit mirror; 0 when it is current.'),
      mirrorWriting: gauge('florete_mirror_writing', '1 when this process is the replica writing the git audit mirror.'),
      checkpointAgeSeconds: gauge('florete_checkpoint_age_seconds', 'Seconds since the newest signed checkpoint of the ledger head was signed.'),
    };
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.counts = {
      mirrorCommits: counter('florete_mirror_commits_total', 'Mirror commits this process wrote.'),
      mirrorPushFailures: counter('florete_mirror_push_failures_total', 'Failed pushes of the mirror to its remote by this process.'),
    };
    this.nodes = new Gauge({
      name: 'florete_nodes',
      help: 'Nodes by lifecycle (enrolled, unmanaged, retired) and convergence (converged, outstanding, failed; unpublished when nothing was published for the node).',
      labelNames: ['lifecycle', 'convergence'],
      registers,
    });
    this.contactAge = new Gauge({
      name: 'florete_nodes_by_contact_age',
      help: 'Enrolled nodes by the age of their last contact: within 5m, 1h, 1d, 7d, older, or never since enrolment; each node in the first bucket it is within.',
      labelNames: ['age'],
      registers,
    });
    this.agentVersions = new Gauge({
      name: 'florete_nodes_by_agent_version',
      help: 'Enrolled nodes by the agent version they last said they run (unknown: never said; other: the rarest, past a bounded number of versions).',
      labelNames: ['version'],
      registers,
    });
    this.ready = gauge(
      'florete_ready',
      '1 when the database answered the readiness check of this scrape (as /readyz answering 200); 0 leaves the database-read gauges out.',
    );
    this.buildInfo = new Gauge({
      name: 'florete_build_info',
      help: 'Always 1: the coordinator version, the Node.js version it runs on, and its database kind.',
      labelNames: ['version', 'node_version', 'database'],
      registers,
    });
  }

  /** One request's latency, for the routes that have a histogram. */
  observe(route: string, status: number, seconds: number): void {
    if (route === POLL_ROUTE) this.pollSeconds.add(status, seconds);
    else if (route === PUBLISH_ROUTE) this.publishSeconds.observe({ status: String(status) }, seconds);
  }

  /** The exposition text, with the database-read gauges and this process's counts as given. */
  async render(readings: ScrapeReadings, database: string): Promise<string> {
    this.ready.set(readings.ready ? 1 : 0);
    if (readings.ready) {
      for (const [key, value] of Object.entries(readings.gauges) as [keyof ScrapeGauges, number | boolean][]) this.gauges[key].set(Number(value));
    } else {
      // NaN, not the last values read: a stale ledger or mirror position would look current.
      for (const gauge of Object.values(this.gauges)) gauge.set(Number.NaN);
    }
    for (const [key, value] of Object.entries(readings.counts) as [keyof ScrapeCounts, number][]) {
      this.counts[key].reset();
      this.counts[key].inc(value);
    }
    this.setFleet(readings.ready ? readings.fleet : { nodes: [], contactAge: [], agentVersions: [] });
    this.buildInfo.reset();
    this.buildInfo.set({ version: COORDINATOR_VERSION, node_version: process.version, database }, 1);
    return this.registry.metrics();
  }

  /** Reset first, so a state no node is in any more leaves the scrape instead of keeping its last count. */
  private setFleet(fleet: FleetGauges): void {
    this.nodes.reset();
    for (const n of fleet.nodes) this.nodes.set({ lifecycle: n.lifecycle, convergence: n.convergence }, n.count);
    this.contactAge.reset();
    for (const c of fleet.contactAge) this.contactAge.set({ age: c.age }, c.count);
    this.agentVersions.reset();
    for (const v of fleet.agentVersions) this.agentVersions.set({ version: v.version }, v.count);
  }
}

/** Times every poll and publish from the request's arrival to the response's last byte. */
export function observeRequestLatency(fastify: FastifyInstance, metrics: Metrics): void {
  fastify.addHook('onResponse', (req, reply, done) => {
    const url = req.routeOptions?.url;
    if (url && !metrics.held.has(req.raw)) metrics.observe(`${req.method} ${url}`, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
