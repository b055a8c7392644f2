import { statusFilter } from './status-filter.js';

describe('status filter', () => {
  it('passes the lifecycle and convergence words, the credential and the contact age to the API', () => {
    expect(statusFilter({})).toEqual({ ok: true, query: '', notes: [] });
    expect(statusFilter({ state: 'unmanaged' })).toEqual({ ok: true, query: '?state=unmanaged', notes: [] });
    expect(statusFilter({ state: 'failed', credential: 'live' })).toEqual({ ok: true, query: '?state=failed&credential=live', notes: [] });
    expect(statusFilter({ state: 'enrolled', contactOlderThanSeconds: 3600 })).toEqual({
      ok: true,
      query: '?state=enrolled&contact_older_than=3600s',
      notes: [],
    });
  });

  it('maps the words of the older vocabulary to the filter giving the same nodes, with a deprecation note', () => {
    expect(statusFilter({ state: 'pending' })).toEqual({
      ok: true,
      query: '?credential=pending',
      notes: [expect.stringMatching(/^--state pending is deprecated: .*--credential pending/)],
    });
    expect(statusFilter({ state: 'unenrolled' })).toEqual({
      ok: true,
      query: '?state=unmanaged&credential=none',
      notes: [expect.stringMatching(/--state unmanaged --credential none/)],
    });
    expect(statusFilter({ state: 'revoked', contactOlderThanSeconds: 60 })).toMatchObject({
      ok: true,
      query: '?state=enrolled&credential=revoked&contact_older_than=60s',
    });
  });

  it('refuses an old word whose replacement contradicts --credential', () => {
    expect(statusFilter({ state: 'pending', credential: 'live' })).toEqual({
      ok: false,
      error: expect.stringMatching(/--state pending means --credential pending, which contradicts --credential live/),
    });
    expect(statusFilter({ state: 'pending', credential: 'pending' })).toMatchObject({ ok: true, query: '?credential=pending' });
  });

  it('says why the agent-side words are no filter here, and what to ask instead', () => {
    expect(statusFilter({ state: 'disconnected' })).toEqual({
      ok: false,
      error: expect.stringMatching(/never declares a node disconnected.*--contact-older-than 1h/),
    });
    expect(statusFilter({ state: 'hosted' })).toEqual({ ok: false, error: expect.stringMatching(/such a node is unmanaged/) });
  });

  it('names the words it takes for anything else', () => {
    expect(statusFilter({ state: 'lost' })).toEqual({
      ok: false,
      error: '--state lost: must be one of unmanaged, enrolled, retired, converged, outstanding, failed',
    });
    expect(statusFilter({ credential: 'expired' })).toEqual({ ok: false, error: '--credential expired: must be one of none, pending, live, revoked' });
  });
});
