import { cleartextRefusal, isLoopbackHost } from './cleartext.js';
import { judgePeer, type TrustPolicy } from './verifying-agent.js';

describe('isLoopbackHost', () => {
  it('takes 127.0.0.0/8, ::1 (also bracketed and IPv4-mapped) and localhost as this machine', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      '[::1]',
      '::1',
      'localhost',
      'LOCALHOST',
      'localhost.',
      '[::ffff:127.0.0.1]',
      new URL('http://[::ffff:127.0.0.1]/').hostname,
    ])
      expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: true });
  });

  it('takes every other address or name as remote, whatever it may resolve to', () => {
    for (const host of [
      '192.0.2.1',
      '0.0.0.0',
      '[::]',
      '10.0.0.1',
      'coordinator.example',
      'localhost.example',
      '127.0.0.1.example',
      '[::ffff:10.0.0.1]',
      new URL('http://[::ffff:10.0.0.1]/').hostname,
      '[fe80::1]',
    ]) {
      expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: false });
    }
  });
});

describe('cleartextRefusal', () => {
  const refuse = (url: string, allowed = false) => cleartextRefusal(new URL(url), 'API token', 'pass --insecure-http', allowed);

  it('lets https go anywhere and http to loopback only', () => {
    expect(refuse('https://192.0.2.1:8443')).toBeUndefined();
    expect(refuse('http://127.0.0.1:8080')).toBeUndefined();
    expect(refuse('http://[::1]:8080')).toBeUndefined();
    expect(refuse('http://localhost:8080')).toBeUndefined();
  });

  it('refuses http to anything else, saying why and the way past', () => {
    expect(refuse('http://192.0.2.1:8080')).toBe(
      'refusing to send the API token to http://192.0.2.1:8080 over plain http: anyone on the network path could read it and use it. Use an https:// URL, or pass --insecure-http if the path to 192.0.2.1 is trusted; nothing was sent',
    );
    expect(refuse('http://[2001:db8::1]/')).toMatch(
      /^refusing to send the API token to http:\/\/\[2001:db8::1\] over plain http: .* the path to 2001:db8::1 is trusted/,
    );
  });

  it('lets the operator say so explicitly', () => {
    expect(refuse('http://192.0.2.1:8080', true)).toBeUndefined();
  });
});

describe('judgePeer', () => {
  const anchors = { ca: [], source: 'the CA file /etc/florete/ca.pem' };
  const PIN = 'A'.repeat(43);
  const OTHER = 'B'.repeat(43);
  const server = '127.0.0.1:8443';
  const verdict = (chainVerified: boolean, pin: string | undefined, policy: Omit<TrustPolicy, 'anchors'>) => {
    const err = judgePeer({ chainVerified, chainError: chainVerified ? undefined : 'SELF_SIGNED_CERT_IN_CHAIN', pin }, { anchors, ...policy }, server);
    return err ? `${err.code}: ${err.message}` : 'accepted';
  };

  it('at enrolment takes the pinned key and nothing else, a trusted CA included', () => {
    expect(verdict(false, PIN, { pin: PIN, requirePin: true })).toBe('accepted');
    expect(verdict(true, OTHER, { pin: PIN, requirePin: true })).toBe(
      `pin_mismatch: 127.0.0.1:8443 is not the coordinator the enrolment token names: its key's sha256 pin is ${OTHER}, the token pins ${PIN}; wrong address, or something in between; nothing was sent`,
    );
  });

  it('later takes a chain to a trusted CA or the pinned key', () => {
    expect(verdict(true, OTHER, { pin: PIN })).toBe('accepted');
    expect(verdict(false, PIN, { pin: PIN })).toBe('accepted');
    expect(verdict(true, OTHER, {})).toBe('accepted');
  });

  it('refuses anything else, naming both checks that failed', () => {
    expect(verdict(false, OTHER, { pin: PIN })).toBe(
      `untrusted_certificate: refused 127.0.0.1:8443: its certificate is not trusted (SELF_SIGNED_CERT_IN_CHAIN; trusted CAs: the CA file /etc/florete/ca.pem) and its key's sha256 pin is ${OTHER}, not the pinned ${PIN}; nothing was sent`,
    );
    expect(verdict(false, OTHER, {})).toBe(
      'untrusted_certificate: refused 127.0.0.1:8443: its certificate is not trusted (SELF_SIGNED_CERT_IN_CHAIN; trusted CAs: the CA file /etc/florete/ca.pem); nothing was sent',
    );
  });
});
