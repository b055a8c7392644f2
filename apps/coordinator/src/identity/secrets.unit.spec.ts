import { bearerOf, hashSecret, issueSecret, parseSecret, secretMatches } from './secrets.js';

describe('bearer secrets', () => {
  it('issues <kind>.<id>.<secret> and keeps only a hash of the secret', () => {
    const s = issueSecret('flt');
    expect(s.token).toBe(`flt.${s.id}.${s.secret}`);
    expect(s.hash).toBe(hashSecret(s.secret));
    expect(s.hash).not.toContain(s.secret);
    expect(parseSecret(s.token)).toEqual({ kind: 'flt', id: s.id, secret: s.secret });
  });

  it('requires a thumbprint on enrolment tokens and refuses it elsewhere', () => {
    const e = issueSecret('fle');
    const thumb = 'A'.repeat(43);
    expect(parseSecret(`${e.token}.${thumb}`)).toEqual({ kind: 'fle', id: e.id, secret: e.secret, thumbprint: thumb });
    expect(parseSecret(e.token)).toBeNull();
    expect(parseSecret(`${issueSecret('fln').token}.${thumb}`)).toBeNull();
  });

  it('takes the TLS key pin after the thumbprint on enrolment tokens only', () => {
    const e = issueSecret('fle');
    const thumb = 'A'.repeat(43);
    const pin = 'B'.repeat(43);
    expect(parseSecret(`${e.token}.${thumb}.${pin}`)).toEqual({ kind: 'fle', id: e.id, secret: e.secret, thumbprint: thumb, tlsPin: pin });
    expect(parseSecret(`${e.token}.${thumb}.${pin}.${pin}`)).toBeNull();
    expect(parseSecret(`${e.token}.${thumb}.short`)).toBeNull();
    expect(parseSecret(`${issueSecret('flt').token}.${thumb}.${pin}`)).toBeNull();
  });

  it('refuses malformed tokens', () => {
    for (const bad of [
      '',
      'flt',
      'flt..',
      'xyz.0123456789abcdef01.' + 'a'.repeat(43),
      'flt.0123456789ABCDEF01.' + 'a'.repeat(43),
      `flt.${'0'.repeat(18)}.${'a'.repeat(42)}`,
    ]) {
      expect(parseSecret(bad)).toBeNull();
    }
  });

  it('matches only the secret whose hash is stored, and never when no row was found', () => {
    const s = issueSecret('fln');
    expect(secretMatches(s.secret, s.hash)).toBe(true);
    expect(secretMatches(issueSecret('fln').secret, s.hash)).toBe(false);
    expect(secretMatches(s.secret, null)).toBe(false);
  });

  it('reads only a well-formed Bearer header', () => {
    expect(bearerOf('Bearer abc')).toBe('abc');
    expect(bearerOf('bearer   abc  ')).toBe('abc');
    expect(bearerOf('Basic abc')).toBeNull();
    expect(bearerOf('Bearer a b')).toBeNull();
    expect(bearerOf(undefined)).toBeNull();
    expect(bearerOf(['Bearer a'])).toBeNull();
  });
});
