import { appliedWait, MAX_PREFER_WAIT_SECONDS, parsePreferWait, refusalRetryAfter, watchDeadline } from './prefer-wait.js';

describe('parsePreferWait (RFC 7240)', () => {
  it('reads wait among other preferences, in any case, quoted or with parameters', () => {
    expect(parsePreferWait(undefined)).toEqual({ ok: true, wait: null });
    expect(parsePreferWait('wait=30')).toEqual({ ok: true, wait: 30 });
    expect(parsePreferWait('respond-async, Wait=10')).toEqual({ ok: true, wait: 10 });
    expect(parsePreferWait('return=minimal; foo="bar", wait = 7 ; x')).toEqual({ ok: true, wait: 7 });
    expect(parsePreferWait('wait="12"')).toEqual({ ok: true, wait: 12 });
    expect(parsePreferWait(['handling=lenient', 'wait=5'])).toEqual({ ok: true, wait: 5 });
    expect(parsePreferWait('wait=0')).toEqual({ ok: true, wait: 0 });
  });

  it('takes the first wait and ignores preferences it does not know', () => {
    expect(parsePreferWait('wait=3, wait=9')).toEqual({ ok: true, wait: 3 });
    expect(parsePreferWait('return=representation')).toEqual({ ok: true, wait: null });
    expect(parsePreferWait(' , ')).toEqual({ ok: true, wait: null });
  });

  it.each([
    'wait',
    'wait=',
    'wait=-1',
    'wait=1.5',
    'wait=soon',
    'wait=1e3',
    `wait=${MAX_PREFER_WAIT_SECONDS + 1}`,
    'wait=99999999999999999999',
    'wa it=3',
    '"wait"=3',
  ])('refuses %j with a reason', (header) => {
    const parsed = parsePreferWait(header);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toMatch(/^Prefer: /);
  });

  it('allows a day at most', () => {
    expect(parsePreferWait(`wait=${MAX_PREFER_WAIT_SECONDS}`)).toEqual({ ok: true, wait: MAX_PREFER_WAIT_SECONDS });
  });
});

describe('watch timing', () => {
  it('caps the wait at the coordinator maximum', () => {
    expect(appliedWait(30, 300)).toBe(30);
    expect(appliedWait(3600, 300)).toBe(300);
  });

  it('adds up to a sixteenth of the wait as jitter', () => {
    expect(watchDeadline(1000, 160, 0)).toBe(161_000);
    expect(watchDeadline(1000, 160, 0.999999)).toBe(1000 + 160_000 + 9999);
    expect(watchDeadline(0, 0, 0.5)).toBe(0);
  });

  it('spreads Retry-After over the spread, never below one second', () => {
    expect(refusalRetryAfter(10, 0)).toBe(1);
    expect(refusalRetryAfter(10, 0.999)).toBe(10);
    expect(refusalRetryAfter(0, 0.5)).toBe(1);
  });
});
