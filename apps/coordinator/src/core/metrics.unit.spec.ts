import { Histogram, Registry } from 'prom-client';
import { Metrics, PollLatencies } from './metrics.js';

const POLL = 'GET /v1/nodes/:node/bundle';

/** The poll latency histogram's lines of a scrape, without its HELP and TYPE. */
function pollLines(text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith('florete_poll_duration_seconds_'));
}

/** A scrape with the database unreachable: this process's own figures only. */
const scrape = (m: Metrics) => m.render({ ready: false, counts: { mirrorCommits: 0, mirrorPushFailures: 0 } }, 'postgres');

describe('PollLatencies', () => {
  it('scrapes the same histogram as observing each latency at once, for latencies kept and those a full buffer observed', async () => {
    const buckets = [0.0005, 0.001, 0.01, 1];
    const direct = new Registry();
    const histogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['status'], buckets, registers: [direct] });
    const kept = new Registry();
    const latencies: PollLatencies = new PollLatencies(
      new Histogram({
        name: 'h_seconds',
        help: 'h',
        labelNames: ['status'],
        buckets,
        registers: [kept],
        collect() {
          latencies.observe();
        },
      }),
    );
    // More than one buffer's worth (4,096), so that some were observed as the buffer filled.
    for (let i = 0; i < 10_000; i++) {
      const [status, seconds] = i % 7 === 0 ? [200, 0.003 + i / 1e6] : [304, (i % 13) / 10_000];
      histogram.observe({ status: String(status) }, seconds);
      latencies.add(status, seconds);
    }
    const text = await kept.metrics();
    expect(text).toBe(await direct.metrics());
    expect(text).toContain('h_seconds_count{status="304"} 8571');
    // A second scrape with nothing new: the same counts, nothing observed twice.
    expect(await kept.metrics()).toBe(await direct.metrics());
  });

  it('goes on keeping latencies after the histogram refused one', async () => {
    const registry = new Registry();
    const latencies: PollLatencies = new PollLatencies(
      new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['status'], buckets: [1], registers: [registry], collect: () => latencies.observe() }),
    );
    latencies.add(304, Number.NaN);
    await expect(registry.metrics()).rejects.toThrow(/not a valid number/);
    latencies.add(304, 0.5);
    expect(await registry.metrics()).toContain('h_seconds_count{status="304"} 1');
  });
});

describe('Metrics', () => {
  it('scrapes every poll latency and cache hit counted since the last scrape', async () => {
    const m = new Metrics();
    for (let i = 0; i < 5; i++) {
      m.observe(POLL, 304, 0.0002);
      m.pollCache.hit();
    }
    m.observe(POLL, 200, 0.02);
    m.pollCache.miss();
    const text = await scrape(m);
    expect(pollLines(text)).toEqual(
      expect.arrayContaining([
        'florete_poll_duration_seconds_bucket{le="0.0005",status="304"} 5',
        'florete_poll_duration_seconds_count{status="304"} 5',
        'florete_poll_duration_seconds_bucket{le="0.01",status="200"} 0',
        'florete_poll_duration_seconds_bucket{le="0.025",status="200"} 1',
        'florete_poll_duration_seconds_count{status="200"} 1',
      ]),
    );
    expect(text).toMatch(/^florete_poll_cache_hits_total 5$/m);
    expect(text).toMatch(/^florete_poll_cache_misses_total 1$/m);
    m.observe(POLL, 304, 0.0002);
    m.pollCache.hit();
    const again = await scrape(m);
    expect(pollLines(again)).toContain('florete_poll_duration_seconds_count{status="304"} 6');
    expect(again).toMatch(/^florete_poll_cache_hits_total 6$/m);
  });
});
