import { backoffDelay, nextPollDelay, timingFrom } from '../apps/flor/src/agent/schedule.js';
import { parseRetryAfter } from '../apps/flor/src/agent/http.js';

const timing = { pollIntervalMs: 30_000, splayMs: 10_000 };

describe('agent poll schedule', () => {
  it('polls at the interval plus jitter within splay', () => {
    expect(nextPollDelay(timing, 0)).toBe(30_000);
    expect(nextPollDelay(timing, 0.5)).toBe(35_000);
    expect(nextPollDelay(timing, 0.999)).toBeLessThan(40_000);
  });

  it('takes the interval and splay from the active agent.json, and the local default without one', () => {
    const agentJson = JSON.stringify({ node: 'a', mesh: 'm', coordinator: 'https://c.example/', sync: { poll_interval: 7, splay: 3 } });
    expect(timingFrom(agentJson, 60)).toEqual({ pollIntervalMs: 7000, splayMs: 3000 });
    expect(timingFrom(null, 60)).toEqual({ pollIntervalMs: 60_000, splayMs: 0 });
    expect(timingFrom('{"sync": "nope"}', 60)).toEqual({ pollIntervalMs: 60_000, splayMs: 0 });
    expect(timingFrom('not json', 45)).toEqual({ pollIntervalMs: 45_000, splayMs: 0 });
  });

  it('backs off exponentially with jitter over the upper half, up to the cap', () => {
    const max = 300_000;
    expect([1, 2, 3].map((n) => backoffDelay(timing, n, max, 1))).toEqual([30_000, 60_000, 120_000]);
    expect([1, 2, 3].map((n) => backoffDelay(timing, n, max, 0))).toEqual([15_000, 30_000, 60_000]);
    expect(backoffDelay(timing, 20, max, 1)).toBe(max);
    expect(backoffDelay(timing, 20, max, 0)).toBe(max / 2);
  });

  it('never retries before a Retry-After', () => {
    expect(backoffDelay(timing, 1, 300_000, 0, 100_000)).toBe(100_000);
    expect(backoffDelay(timing, 1, 300_000, 0, 1_000)).toBe(15_000);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-29T08:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 08:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 07:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
