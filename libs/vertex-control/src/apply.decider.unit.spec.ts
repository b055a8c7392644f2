import fc from 'fast-check';
import type { FlorJson } from '#contracts';
import { decideApply, initialRunning } from './apply.decider.js';
import { acl, florJson, listen } from '../../../test/fixtures/vertex/flor-json.arbitraries.js';

const base: FlorJson = {
  node: 'alpha',
  mesh: 'prod',
  listen: '10.0.0.1:7000',
  services: [{ name: 'web', port: 8080, protocol: 'tcp' }],
  acl: {
    ingress: { web: ['beta', 'gamma'] },
    egress: [],
    peers: [
      { node: 'beta', listen: '10.0.0.2:7000' },
      { node: 'gamma', listen: '10.0.0.3:7000' },
    ],
  },
};
/** gamma revoked, as the compiler writes it: off the ingress list and out of the peers. */
const aclOnly: FlorJson = { ...base, acl: { ingress: { web: ['beta'] }, egress: [], peers: [{ node: 'beta', listen: '10.0.0.2:7000' }] } };

describe('decideApply', () => {
  it('swaps an allow-list change: new tables, new version, one more swap', () => {
    const running = initialRunning(base, 1);
    const { answer, running: next } = decideApply(running, 2, aclOnly);
    expect(answer).toEqual({ result: 'swapped', version: 2, running_version: 2, changed: ['acl.ingress.web[1]', 'acl.peers[1]'] });
    expect(next.acl.allowsIngress('web', 'gamma')).toBe(false);
    expect(next.acl.peerAddress('gamma')).toBeUndefined();
    expect(next.acl.allowsIngress('web', 'beta')).toBe(true);
    expect(next.acl.peerAddress('beta')).toBe('10.0.0.2:7000');
    expect(next).toMatchObject({ version: 2, config: aclOnly, swaps: 1 });
    expect(running.acl.allowsIngress('web', 'gamma')).toBe(true);
    expect(running.acl.peerAddress('gamma')).toBe('10.0.0.3:7000');
  });

  it('applies nothing when a restart is needed, even the acl part of the change', () => {
    fc.assert(
      fc.property(listen, acl, (l, nextAcl) => {
        fc.pre(l !== base.listen);
        const running = initialRunning(base, 1);
        const { answer, running: next } = decideApply(running, 2, { ...base, listen: l, acl: nextAcl });
        expect(answer).toMatchObject({ result: 'restart', version: 2, running_version: 1 });
        expect(next).toBe(running);
      }),
      { numRuns: 300 },
    );
  });

  it('answers unchanged to the same config under a newer version and moves the running version', () => {
    const { answer, running } = decideApply(initialRunning(base, 4), 5, structuredClone(base));
    expect(answer).toEqual({ result: 'unchanged', version: 5, running_version: 5, changed: [] });
    expect(running.version).toBe(5);
  });

  it('refuses a version older than the running one, and a different config under the running version', () => {
    const running = initialRunning(base, 4);
    expect(decideApply(running, 3, aclOnly)).toEqual({ running, answer: expect.objectContaining({ result: 'error', code: 'stale_version', version: 3 }) });
    expect(decideApply(running, 4, aclOnly)).toEqual({ running, answer: expect.objectContaining({ result: 'error', code: 'version_conflict', version: 4 }) });
    expect(decideApply(running, 4, base).answer.result).toBe('unchanged');
  });

  it('takes any version when the vertex started without one', () => {
    fc.assert(
      fc.property(florJson, fc.integer({ min: 1, max: 1000 }), (next, version) => {
        const { answer } = decideApply(initialRunning(base, null), version, next);
        expect(answer.result).not.toBe('error');
      }),
      { numRuns: 300 },
    );
  });
});
