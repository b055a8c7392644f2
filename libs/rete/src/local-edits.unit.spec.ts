import type { ReteFile, ReteNode } from '#contracts';
import { editAgent, editFlor, localEdits, type LocalEdits } from './local-edits.js';
import { presortedPretty, sortedPretty } from './sorted-json.js';

const file = (listen: string, extra: Partial<ReteNode> = {}): ReteFile => ({
  nodes: [
    { name: 'a', kind: 'server', listen: '10.0.0.1:7946', tags: ['web'] },
    { name: 'b', kind: 'server', listen, services: [{ name: 'web', port: 443 }], ...extra },
  ],
  acl: [{ from: ['a'], to: ['b:web'] }],
});
/** Only listen addresses moved. */
const listens = (entries: [string, string][]): LocalEdits => ({ listens: new Map(entries), services: new Map(), syncs: new Map() });
/** Listen addresses the same, services moved. */
const services = (entries: [string, LocalEdits['services'] extends Map<string, infer S> ? S : never][]): LocalEdits => ({
  listens: new Map(),
  services: new Map(entries),
  syncs: new Map(),
});

describe('local edits', () => {
  it('finds the nodes whose listen address is all that changed, keys in any order', () => {
    expect(localEdits(file('10.0.0.2:7946'), file('10.0.0.2:7000'))).toEqual(listens([['b', '10.0.0.2:7000']]));
    const reordered = { acl: file('x').acl, nodes: file('10.0.0.2:7946').nodes?.map((n) => Object.fromEntries(Object.entries(n).reverse())) } as ReteFile;
    expect(localEdits(file('10.0.0.2:7946'), reordered)).toEqual(listens([]));
  });

  it('gives up on any other change: a node field, a node more or renamed, a rule, a mesh-wide setting', () => {
    const before = file('10.0.0.2:7946');
    expect(localEdits(before, file('10.0.0.2:7000', { tags: ['db'] }))).toBeUndefined();
    expect(localEdits(before, file('10.0.0.2:7946', { kind: 'device' }))).toBeUndefined();
    expect(localEdits(before, { ...before, nodes: [...(before.nodes ?? []), { name: 'c', kind: 'server', listen: '10.0.0.3:7946' }] })).toBeUndefined();
    expect(localEdits(before, { ...before, nodes: [...(before.nodes ?? [])].reverse() })).toBeUndefined();
    expect(localEdits(before, { ...before, acl: [{ from: ['b'], to: ['a:web'] }] })).toBeUndefined();
    expect(localEdits(before, { ...before, defaults: { sync: { poll_interval: '1m' } } })).toBeUndefined();
  });

  it('finds the nodes whose own sync block changed, came or went, with the block as it now is', () => {
    const before = file('10.0.0.2:7946', { sync: { poll_interval: '1m' } });
    const syncs = (entries: [string, ReteNode['sync']][]): LocalEdits => ({ listens: new Map(), services: new Map(), syncs: new Map(entries) });
    expect(localEdits(before, file('10.0.0.2:7946', { sync: { poll_interval: '2m', splay: '5s' } }))).toEqual(
      syncs([['b', { poll_interval: '2m', splay: '5s' }]]),
    );
    expect(localEdits(before, file('10.0.0.2:7946'))).toEqual(syncs([['b', undefined]]));
    expect(localEdits(file('10.0.0.2:7946'), before)).toEqual(syncs([['b', { poll_interval: '1m' }]]));
    // With another edit of the same node: both.
    expect(localEdits(before, file('10.0.0.2:7000', { sync: { watch: false } }))).toEqual({
      listens: new Map([['b', '10.0.0.2:7000']]),
      services: new Map(),
      syncs: new Map([['b', { watch: false }]]),
    });
  });

  it("finds the nodes whose services' ports and protocols are all that changed, listed as flor.json lists them", () => {
    const two = (web: Record<string, unknown>, extra: Partial<ReteNode> = {}) =>
      file('10.0.0.2:7946', {
        services: [
          { name: 'web', port: 443, ...web },
          { name: 'metrics', port: 9100 },
        ] as ReteNode['services'],
        ...extra,
      });
    const before = two({});
    const listed = (port: number, protocol: 'tcp' | 'udp') => [
      { name: 'metrics', port: 9100, protocol: 'tcp' as const },
      { name: 'web', port, protocol },
    ];
    expect(localEdits(before, two({ port: 8443 }))).toEqual(services([['b', listed(8443, 'tcp')]]));
    expect(localEdits(before, two({ protocol: 'udp' }))).toEqual(services([['b', listed(443, 'udp')]]));
    // The protocol written out as the one it was by default: nothing compiled changes.
    expect(localEdits(before, two({ protocol: 'tcp' }))).toEqual(listens([]));
    expect(localEdits(before, two({ port: 8443 }, { listen: '10.0.0.2:7000' }))).toEqual({
      listens: new Map([['b', '10.0.0.2:7000']]),
      services: new Map([['b', listed(8443, 'tcp')]]),
      syncs: new Map(),
    });
  });

  it("gives up on a service added, removed, renamed or reordered, two on one port, or one moved to SSH's port", () => {
    const before = file('10.0.0.2:7946', {
      services: [
        { name: 'web', port: 443 },
        { name: 'metrics', port: 9100 },
      ],
    });
    const after = (list: ReteNode['services']) => file('10.0.0.2:7946', { services: list });
    const declined: ReteNode['services'][] = [
      // A service removed, one more, one renamed, the two reordered, two on one port.
      [{ name: 'web', port: 443 }],
      [
        { name: 'web', port: 443 },
        { name: 'metrics', port: 9100 },
        { name: 'dns', port: 53 },
      ],
      [
        { name: 'web', port: 443 },
        { name: 'stats', port: 9100 },
      ],
      [
        { name: 'metrics', port: 9100 },
        { name: 'web', port: 443 },
      ],
      [
        { name: 'web', port: 443 },
        { name: 'metrics', port: 443 },
      ],
    ];
    for (const list of declined) expect([list, localEdits(before, after(list))]).toEqual([list, undefined]);
    // The same port over the other protocol is another place to listen.
    expect(
      localEdits(
        before,
        after([
          { name: 'web', port: 443 },
          { name: 'metrics', port: 443, protocol: 'udp' },
        ]),
      )?.services.get('b'),
    ).toHaveLength(2);
    // Port 22 makes a service SSH, which may bring a warning this file did not have.
    expect(
      localEdits(
        before,
        after([
          { name: 'web', port: 443 },
          { name: 'metrics', port: 22 },
        ]),
      ),
    ).toBeUndefined();
    expect(
      localEdits(file('10.0.0.2:7946', { services: [{ name: 'web', port: 22 }] }), file('10.0.0.2:7946', { services: [{ name: 'web', port: 2222 }] }))?.services
        .size,
    ).toBe(1);
  });

  it("puts the new addresses into a compiled flor.json, its own and its peers', or says it cannot", () => {
    const flor = {
      acl: {
        egress: [],
        ingress: {},
        peers: [
          { listen: '10.0.0.2:7946', node: 'b' },
          { listen: '10.0.0.3:7946', node: 'c' },
        ],
      },
      listen: '10.0.0.1:7946',
      mesh: 'm',
      node: 'a',
      services: [],
    };
    const text = presortedPretty(flor);
    expect(editFlor(text, listens([['c', '10.0.0.3:1']]), 'a')).toBe(
      presortedPretty({ ...flor, acl: { ...flor.acl, peers: [flor.acl.peers[0], { listen: '10.0.0.3:1', node: 'c' }] } }),
    );
    expect(editFlor(text, listens([['a', '10.0.0.1:1']]), 'a')).toBe(presortedPretty({ ...flor, listen: '10.0.0.1:1' }));
    // Neither the node nor a peer: a caller that thought it was has it wrong.
    expect(editFlor(text, listens([['d', '10.0.0.4:1']]), 'a')).toBeUndefined();
    // Not as compile writes it, or another node's.
    expect(editFlor(JSON.stringify(flor), listens([['c', '10.0.0.3:1']]), 'a')).toBeUndefined();
    expect(editFlor(text, listens([['c', '10.0.0.3:1']]), 'b')).toBeUndefined();
    expect(editFlor('not json', listens([['c', '10.0.0.3:1']]), 'a')).toBeUndefined();
  });

  it("puts a node's moved services into its own flor.json, never into its peers'", () => {
    const flor = {
      acl: { egress: [], ingress: { web: ['b'] }, peers: [{ listen: '10.0.0.2:7946', node: 'b' }] },
      listen: '10.0.0.1:7946',
      mesh: 'm',
      node: 'a',
      services: [{ name: 'web', port: 443, protocol: 'tcp' }],
    };
    const text = presortedPretty(flor);
    const moved = [{ name: 'web', port: 8443, protocol: 'tcp' as const }];
    expect(editFlor(text, services([['a', moved]]), 'a')).toBe(presortedPretty({ ...flor, services: moved }));
    // A peer's services are not in this node's set: nothing here moved.
    expect(editFlor(text, services([['b', moved]]), 'a')).toBeUndefined();
  });

  it("puts a node's sync into its agent.json as compile writes it, or says it cannot", () => {
    const agent = { coordinator: 'https://c.example.net', mesh: 'm', node: 'a', sync: { poll_interval: 300, splay: 30 } };
    const text = presortedPretty(agent);
    expect(editAgent(text, { poll_interval: 60, splay: 5, watch: false }, 'a')).toBe(
      presortedPretty({ ...agent, sync: { poll_interval: 60, splay: 5, watch: false } }),
    );
    // Health checks, whose keys vary with their kind, sorted as compile sorts them; and taken out again.
    const checks = {
      poll_interval: 60,
      splay: 5,
      watch: true,
      confirm_within: 120,
      health_checks: [{ name: 'up', kind: 'tcp' as const, address: '127.0.0.1:22', timeout: 5 }],
    };
    const checked = editAgent(text, checks, 'a') as string;
    expect(checked).toBe(sortedPretty({ ...agent, sync: { confirm_within: 120, health_checks: checks.health_checks, poll_interval: 60, splay: 5 } }));
    expect(editAgent(checked, { poll_interval: 300, splay: 30, watch: true }, 'a')).toBe(text);
    // Not as compile writes it, another node's, or not JSON.
    expect(editAgent(JSON.stringify(agent), { poll_interval: 60, splay: 5, watch: true }, 'a')).toBeUndefined();
    expect(editAgent(text, { poll_interval: 60, splay: 5, watch: true }, 'b')).toBeUndefined();
    expect(editAgent('not json', { poll_interval: 60, splay: 5, watch: true }, 'a')).toBeUndefined();
  });
});
