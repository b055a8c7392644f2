import fc from 'fast-check';
import { AclTable } from './acl-table.js';
import { acl, nodeName, serviceName } from '../../../test/fixtures/vertex/flor-json.arbitraries.js';

describe('AclTable', () => {
  it('admits exactly the peers on a service ingress list, and nobody to an unlisted service', () => {
    fc.assert(
      fc.property(acl, serviceName, nodeName, (lists, service, peer) => {
        expect(AclTable.from(lists).allowsIngress(service, peer)).toBe((lists.ingress[service] ?? []).includes(peer));
      }),
      { numRuns: 500 },
    );
  });

  it('allows exactly the listed node:service egress pairs', () => {
    fc.assert(
      fc.property(acl, nodeName, serviceName, (lists, node, service) => {
        expect(AclTable.from(lists).allowsEgress(node, service)).toBe(lists.egress.some((e) => e.node === node && e.service === service));
      }),
      { numRuns: 500 },
    );
  });

  it('gives the address of exactly the listed peers', () => {
    fc.assert(
      fc.property(acl, nodeName, (lists, node) => {
        expect(AclTable.from(lists).peerAddress(node)).toBe(lists.peers.find((p) => p.node === node)?.listen);
      }),
      { numRuns: 500 },
    );
  });

  it('is frozen and does not follow later changes to the lists it was built from', () => {
    const lists = { ingress: { web: ['beta'] }, egress: [], peers: [{ node: 'beta', listen: '10.0.0.2:7000' }] };
    const table = AclTable.from(lists);
    lists.ingress.web.push('gamma');
    lists.peers.push({ node: 'gamma', listen: '10.0.0.3:7000' });
    expect(Object.isFrozen(table)).toBe(true);
    expect(table.allowsIngress('web', 'gamma')).toBe(false);
    expect(table.peerAddress('gamma')).toBeUndefined();
  });
});
