import { enrolmentTokenRefusal } from './enrolment.rules.js';

describe('enrolment token rules', () => {
  const now = new Date('2026-11-30T12:00:00Z');
  const token = { node: 'alpha', used_at: null, expires_at: '2026-11-30T13:00:00Z', thumbprint: 'tp' };

  it('lets an unused, unexpired token for the expected key enrol', () => {
    expect(enrolmentTokenRefusal(token, { thumbprint: 'tp' }, now)).toBeNull();
  });

  it('refuses a token used before, expired (at its expiry too), or issued for another key', () => {
    expect(enrolmentTokenRefusal({ ...token, used_at: new Date('2026-11-30T11:00:00Z') }, { thumbprint: 'tp' }, now)).toBe('enrolment token was already used');
    expect(enrolmentTokenRefusal({ ...token, expires_at: '2026-11-30T12:00:00Z' }, { thumbprint: 'tp' }, now)).toBe(
      'enrolment token expired at 2026-11-30T12:00:00.000Z',
    );
    expect(enrolmentTokenRefusal(token, { thumbprint: 'other' }, now)).toBe('enrolment token carries the wrong key thumbprint');
    expect(enrolmentTokenRefusal(token, {}, now)).toBe('enrolment token carries the wrong key thumbprint');
  });
});
