import { INITIAL_AGENT_STATE, type AgentIdentity } from '#contracts';
import {
  pollBackoffDelay,
  firstPollDelay,
  nextPollDelay,
  RETIRED_POLL_MS,
  retiredPollDelay,
  timingFrom,
  watchRetryDelay,
  watchWaitSeconds,
  WATCH_RETRY_MS,
} from './schedule.js';
import { answerError, parseRetryAfter } from './http.js';
import { isRetired } from './retirement.js';
import { AgentError } from '../errors.js';

const timing = { pollIntervalMs: 30_000, splayMs: 10_000, watch: true };

describe('agent poll schedule', () => {
  it('polls at the interval plus jitter within splay', () => {
    expect(nextPollDelay(timing, 0)).toBe(30_000);
    expect(nextPollDelay(timing, 0.5)).toBe(35_000);
    expect(nextPollDelay(timing, 0.999)).toBeLessThan(40_000);
  });

  it('takes the interval and splay from the active agent.json, and the local default without one', () => {
    const agentJson = JSON.stringify({ node: 'a', mesh: 'm', coordinator: 'https://c.example/', sync: { poll_interval: 7, splay: 3 } });
    expect(timingFrom(agentJson, 60)).toEqual({ pollIntervalMs: 7000, splayMs: 3000, watch: true });
    expect(timingFrom(null, 60)).toEqual({ pollIntervalMs: 60_000, splayMs: 0, watch: true });
    expect(timingFrom('{"sync": "nope"}', 60)).toEqual({ pollIntervalMs: 60_000, splayMs: 0, watch: true });
    expect(timingFrom('not json', 45)).toEqual({ pollIntervalMs: 45_000, splayMs: 0, watch: true });
  });

  it('backs off exponentially with jitter over the upper half, up to the cap', () => {
    const max = 300_000;
    expect([1, 2, 3].map((n) => pollBackoffDelay(timing, n, max, 1))).toEqual([30_000, 60_000, 120_000]);
    expect([1, 2, 3].map((n) => pollBackoffDelay(timing, n, max, 0))).toEqual([15_000, 30_000, 60_000]);
    expect(pollBackoffDelay(timing, 20, max, 1)).toBe(max);
    expect(pollBackoffDelay(timing, 20, max, 0)).toBe(max / 2);
  });

  it('never retries before a Retry-After', () => {
    expect(pollBackoffDelay(timing, 1, 300_000, 0, 100_000)).toBe(100_000);
    expect(pollBackoffDelay(timing, 1, 300_000, 0, 1_000)).toBe(15_000);
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

describe('the agent of a retired node', () => {
  const HOUR = 3600_000;

  it('polls at most hourly, or at its interval when that is longer, plus splay', () => {
    expect(RETIRED_POLL_MS).toBe(HOUR);
    expect(retiredPollDelay({ pollIntervalMs: 1000, splayMs: 0, watch: true }, 0.9)).toBe(HOUR);
    expect(retiredPollDelay(timing, 0.5)).toBe(HOUR + 5000);
    expect(retiredPollDelay({ pollIntervalMs: 2 * HOUR, splayMs: 0, watch: true }, 0)).toBe(2 * HOUR);
  });

  it('starts with a pass at once unless retired, and retired waits out the hour since its last poll', () => {
    const now = Date.parse('2026-11-29T08:00:00Z');
    expect(firstPollDelay(false, now - 1000, now)).toBe(0);
    expect(firstPollDelay(true, null, now)).toBe(0);
    expect(firstPollDelay(true, now - 10 * 60_000, now)).toBe(50 * 60_000);
    expect(firstPollDelay(true, now - 2 * HOUR, now)).toBe(0);
    // A last poll in the future (the clock went back) never means more than an hour.
    expect(firstPollDelay(true, now + 5 * HOUR, now)).toBe(HOUR);
  });

  it('is retired only for the enrolment the coordinator said it to', () => {
    const identity = { enrolled_at: '2026-11-29T07:00:00.000Z' } as AgentIdentity;
    const retired = { ...INITIAL_AGENT_STATE, retired: { at: '2026-11-29T07:30:00.000Z', version: 2, enrolled_at: identity.enrolled_at } };
    expect(isRetired(retired, identity)).toBe(true);
    expect(isRetired(retired, { ...identity, enrolled_at: '2026-11-29T09:00:00.000Z' })).toBe(false);
    expect(isRetired(retired, null)).toBe(false);
    expect(isRetired(INITIAL_AGENT_STATE, identity)).toBe(false);
  });

  it("tells a retired node's 401 from any other refused credential by the problem code", () => {
    const answer = (body: unknown) => ({ status: 401, headers: {}, body: Buffer.from(JSON.stringify(body)) });
    const problem = { type: 't', title: 'Unauthorized', status: 401, detail: 'node gamma was retired at version 2: …' };
    const retired = answerError(answer({ ...problem, code: 'retired_credential', node: 'gamma', version: 2 }), 'fetching the bundle');
    expect(retired).toBeInstanceOf(AgentError);
    expect(retired.code).toBe('node_retired');
    expect(retired.retiredVersion).toBe(2);
    expect(retired.message).toBe(
      'fetching the bundle: node gamma was retired at version 2 (401 retired_credential); it gets nothing more: uninstall the agent, or enrol the node again with a new token (flor agent enroll --token …)',
    );
    expect(answerError(answer({ ...problem, code: 'retired_credential', node: 'gamma', version: null }), 'x').message).toMatch(
      /^x: node gamma was retired \(401/,
    );
    expect(answerError(answer({ ...problem, code: 'unauthenticated' }), 'x').code).toBe('unauthorized');
    // A body that does not parse as the contract is an ordinary refusal, not a guess.
    expect(answerError(answer({ ...problem, code: 'retired_credential' }), 'x').code).toBe('unauthorized');
  });
});

describe('agent watch schedule', () => {
  it('watches unless the active agent.json turns it off', () => {
    const off = JSON.stringify({ node: 'a', mesh: 'm', coordinator: 'https://c.example/', sync: { poll_interval: 7, splay: 3, watch: false } });
    expect(timingFrom(off, 60)).toEqual({ pollIntervalMs: 7000, splayMs: 3000, watch: false });
  });

  it('asks to wait the poll interval, at least a second', () => {
    expect(watchWaitSeconds(timing)).toBe(30);
    expect(watchWaitSeconds({ ...timing, pollIntervalMs: 1 })).toBe(1);
  });

  it('retries a failed watch within a window that doubles from a few seconds up to the interval, full jitter', () => {
    expect([1, 2, 3].map((n) => watchRetryDelay(timing, n, 300_000, 0.999999))).toEqual([WATCH_RETRY_MS - 1, 2 * WATCH_RETRY_MS - 1, 4 * WATCH_RETRY_MS - 1]);
    expect(watchRetryDelay(timing, 1, 300_000, 0)).toBe(0);
    expect(watchRetryDelay(timing, 20, 300_000, 0.5)).toBe(15_000);
    expect(watchRetryDelay(timing, 20, 10_000, 0.5)).toBe(5_000);
  });

  it('waits at least what Retry-After says', () => {
    expect(watchRetryDelay(timing, 1, 300_000, 0, 7000)).toBe(7000);
  });
});
