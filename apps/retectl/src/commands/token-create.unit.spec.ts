import { expiryNote } from './token-create.js';
import { expiryCell } from './token-list.js';

describe('how an API token expiry reads', () => {
  const created_at = '2026-12-01T10:00:00.000Z';

  it('at creation: when, in how long, and whether it was the coordinator default', () => {
    expect(expiryNote({ created_at, expires_at: '2027-03-01T10:00:00.000Z', default_expiry: true })).toBe(
      "expires 2027-03-01T10:00:00.000Z (in 90d, the coordinator's default: --ttl or --no-expiry to choose)",
    );
    expect(expiryNote({ created_at, expires_at: '2026-12-01T11:30:00.000Z', default_expiry: false })).toBe('expires 2026-12-01T11:30:00.000Z (in 1h30m)');
    expect(expiryNote({ created_at, expires_at: null, default_expiry: false })).toBe('never expires (--no-expiry)');
  });

  it('from a coordinator that predates expiring tokens: the token is still shown, its expiry said to be none', () => {
    expect(expiryNote({})).toBe('no expiry (the coordinator predates expiring tokens)');
  });

  it('in the list: how long is left, how long ago, or never', () => {
    const now = new Date('2026-12-01T10:00:00.000Z');
    expect(expiryCell({ expires_at: '2026-12-08T10:00:00.000Z' }, now)).toBe('in 7d');
    expect(expiryCell({ expires_at: '2026-11-29T09:00:00.000Z' }, now)).toBe('2d1h ago');
    expect(expiryCell({ expires_at: null }, now)).toBe('never');
  });
});
