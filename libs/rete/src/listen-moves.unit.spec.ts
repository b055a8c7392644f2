import type { ReteFile, ReteNode } from '#contracts';
import { listenMoves, moveListens } from './listen-moves.js';
import { presortedPretty } from './sorted-json.js';

const file = (listen: string, extra: Partial<ReteNode> = {}): ReteFile => ({
  nodes: [
    { name: 'a', kind: 'server', listen: '10.0.0.1:7946', tags: ['web'] },
    { name: 'b', kind: 'server', listen, ...extra },
  ],
  acl: [{ from: ['a'], to: ['b:web'] }],
});

describe('listen moves', () => {
  it('finds the nodes whose listen address is all that changed, keys in any order', () => {
    expect(listenMoves(file('10.0.0.2:7946'), file('10.0.0.2:7000'))).toEqual(new Map([['b', '10.0.0.2:7000']]));
    const reordered = { acl: file('x').acl, nodes: file('10.0.0.2:7946').nodes?.map((n) => Object.fromEntries(Object.entries(n).reverse())) } as ReteFile;
    expect(listenMoves(file('10.0.0.2:7946'), reordered)).toEqual(new Map());
  });

  it('gives up on any other change: a node field, a node more or renamed, a rule, a mesh-wide setting', () => {
    const before = file('10.0.0.2:7946');
    expect(listenMoves(before, file('10.0.0.2:7000', { tags: ['db'] }))).toBeUndefined();
    expect(listenMoves(before, file('10.0.0.2:7946', { sync: { poll_interval: '1m' } }))).toBeUndefined();
    expect(listenMoves(before, { ...before, nodes: [...(before.nodes ?? []), { name: 'c', kind: 'server', listen: '10.0.0.3:7946' }] })).toBeUndefined();
    expect(listenMoves(before, { ...before, nodes: [...(before.nodes ?? [])].reverse() })).toBeUndefined();
    expect(listenMoves(before, { ...before, acl: [{ from: ['b'], to: ['a:web'] }] })).toBeUndefined();
    expect(listenMoves(before, { ...before, defaults: { sync: { poll_interval: '1m' } } })).toBeUndefined();
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
    expect(moveListens(text, new Map([['c', '10.0.0.3:1']]), 'a')).toBe(
      presortedPretty({ ...flor, acl: { ...flor.acl, peers: [flor.acl.peers[0], { listen: '10.0.0.3:1', node: 'c' }] } }),
    );
    expect(moveListens(text, new Map([['a', '10.0.0.1:1']]), 'a')).toBe(presortedPretty({ ...flor, listen: '10.0.0.1:1' }));
    // Neither the node nor a peer: a caller that thought it was has it wrong.
    expect(moveListens(text, new Map([['d', '10.0.0.4:1']]), 'a')).toBeUndefined();
    // Not as compile writes it, or another node's.
    expect(moveListens(JSON.stringify(flor), new Map([['c', '10.0.0.3:1']]), 'a')).toBeUndefined();
    expect(moveListens(text, new Map([['c', '10.0.0.3:1']]), 'b')).toBeUndefined();
    expect(moveListens('not json', new Map([['c', '10.0.0.3:1']]), 'a')).toBeUndefined();
  });
});
