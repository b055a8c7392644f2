import type { ReteFile, ReteNode } from '#contracts';
import { florServices } from './compile.js';
import { formatDiagnostic } from './diagnostics.js';
import { editAgent, editedWarnings, editFlor, localEdits, type KeptDiagnostic, type LocalEdits } from './local-edits.js';
import { parseFile } from './parse-file.js';
import { presortedPretty, sortedPretty } from './sorted-json.js';
import { servicesOf, validateRete } from './validate.js';

const file = (listen: string, extra: Partial<ReteNode> = {}): ReteFile => ({
  nodes: [
    { name: 'a', kind: 'server', listen: '10.0.0.1:7946', tags: ['web'] },
    { name: 'b', kind: 'server', listen, services: [{ name: 'web', port: 443 }], ...extra },
  ],
  acl: [{ from: ['a'], to: ['b:web'] }],
});
/** Only listen addresses moved. */
const listens = (entries: [string, string][]): LocalEdits => ({ listens: new Map(entries), services: new Map(), syncs: new Map(), tags: new Map() });
/** Listen addresses the same, services moved. */
const services = (entries: [string, LocalEdits['services'] extends Map<string, infer S> ? S : never][]): LocalEdits => ({
  listens: new Map(),
  services: new Map(entries),
  syncs: new Map(),
  tags: new Map(),
});

describe('local edits', () => {
  it('finds the nodes whose listen address is all that changed, keys in any order', () => {
    expect(localEdits(file('10.0.0.2:7946'), file('10.0.0.2:7000'))).toEqual(listens([['b', '10.0.0.2:7000']]));
    const reordered = { acl: file('x').acl, nodes: file('10.0.0.2:7946').nodes?.map((n) => Object.fromEntries(Object.entries(n).reverse())) } as ReteFile;
    expect(localEdits(file('10.0.0.2:7946'), reordered)).toEqual(listens([]));
  });

  it('gives up on any other change: a node field, a node more or renamed, a rule, a mesh-wide setting', () => {
    const before = file('10.0.0.2:7946');
    expect(localEdits(before, file('10.0.0.2:7000', { description: 'the database' }))).toBeUndefined();
    expect(localEdits(before, file('10.0.0.2:7946', { kind: 'device' }))).toBeUndefined();
    expect(localEdits(before, { ...before, nodes: [...(before.nodes ?? []), { name: 'c', kind: 'server', listen: '10.0.0.3:7946' }] })).toBeUndefined();
    expect(localEdits(before, { ...before, nodes: [...(before.nodes ?? [])].reverse() })).toBeUndefined();
    expect(localEdits(before, { ...before, acl: [{ from: ['b'], to: ['a:web'] }] })).toBeUndefined();
    expect(localEdits(before, { ...before, defaults: { sync: { poll_interval: '1m' } } })).toBeUndefined();
  });

  it('finds the nodes whose tags changed as a set, with their tags before and now', () => {
    const before = file('10.0.0.2:7946', { tags: ['db', 'eu'] });
    const tags = (was: string[], now: string[]): LocalEdits => ({
      listens: new Map(),
      services: new Map(),
      syncs: new Map(),
      tags: new Map([['b', { was, now }]]),
    });
    expect(localEdits(before, file('10.0.0.2:7946', { tags: ['eu', 'canary', 'db'] }))).toEqual(tags(['db', 'eu'], ['canary', 'db', 'eu']));
    expect(localEdits(before, file('10.0.0.2:7946'))).toEqual(tags(['db', 'eu'], []));
    // The same tags in another order, or one written twice: the same labels, nothing changed.
    expect(localEdits(before, file('10.0.0.2:7946', { tags: ['eu', 'db', 'eu'] }))).toEqual(listens([]));
  });

  it('finds the nodes whose own sync block changed, came or went, with the block as it now is', () => {
    const before = file('10.0.0.2:7946', { sync: { poll_interval: '1m' } });
    const syncs = (entries: [string, ReteNode['sync']][]): LocalEdits => ({
      listens: new Map(),
      services: new Map(),
      syncs: new Map(entries),
      tags: new Map(),
    });
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
      tags: new Map(),
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
      tags: new Map(),
    });
  });

  it('finds services added, removed, renamed or reordered; gives up on two of one name or on one port', () => {
    const before = file('10.0.0.2:7946', {
      services: [
        { name: 'web', port: 443 },
        { name: 'metrics', port: 9100 },
      ],
    });
    const after = (list: ReteNode['services']) => file('10.0.0.2:7946', { services: list });
    const found: [ReteNode['services'], string[]][] = [
      // A service removed, one more, one renamed, the two reordered: flor.json lists them by name.
      [[{ name: 'web', port: 443 }], ['web']],
      [
        [
          { name: 'web', port: 443 },
          { name: 'metrics', port: 9100 },
          { name: 'dns', port: 53 },
        ],
        ['dns', 'metrics', 'web'],
      ],
      [
        [
          { name: 'web', port: 443 },
          { name: 'stats', port: 9100 },
        ],
        ['stats', 'web'],
      ],
    ];
    for (const [list, names] of found)
      expect([
        list,
        localEdits(before, after(list))
          ?.services.get('b')
          ?.map((s) => s.name),
      ]).toEqual([list, names]);
    const reordered = localEdits(
      before,
      after([
        { name: 'metrics', port: 9100 },
        { name: 'web', port: 443 },
      ]),
    );
    expect(reordered?.services.get('b')).toEqual(florServices(servicesOf(before.nodes?.[1] as ReteNode)));
    const declined: ReteNode['services'][] = [
      [
        { name: 'web', port: 443 },
        { name: 'metrics', port: 443 },
      ],
      [
        { name: 'web', port: 443 },
        { name: 'web', port: 9100 },
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

  it("puts a node's moved, added or removed services into its own flor.json, never into its peers'", () => {
    const flor = {
      acl: { egress: [], ingress: { web: ['b'] }, peers: [{ listen: '10.0.0.2:7946', node: 'b' }] },
      listen: '10.0.0.1:7946',
      mesh: 'm',
      node: 'a',
      services: [{ name: 'web', port: 443, protocol: 'tcp' as const }],
    };
    const text = presortedPretty(flor);
    const moved = [{ name: 'web', port: 8443, protocol: 'tcp' as const }];
    expect(editFlor(text, services([['a', moved]]), 'a')).toBe(presortedPretty({ ...flor, services: moved }));
    // A peer's services are not in this node's set: nothing here moved.
    expect(editFlor(text, services([['b', moved]]), 'a')).toBeUndefined();
    // A service more has an ingress entry no rule fills; one removed takes its entry, which no rule filled, with it.
    const dns = { name: 'dns', port: 53, protocol: 'udp' as const };
    const added = editFlor(text, services([['a', [dns, ...flor.services]]]), 'a') as string;
    expect(added).toBe(sortedPretty({ ...flor, acl: { ...flor.acl, ingress: { dns: [], web: ['b'] } }, services: [dns, ...flor.services] }));
    expect(editFlor(added, services([['a', flor.services]]), 'a')).toBe(text);
    // web's entry is not empty: a rule names it, and removing it is not an edit of this node alone.
    expect(editFlor(added, services([['a', [dns]]]), 'a')).toBeUndefined();
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

  describe('the warnings of an edited file', () => {
    // A mesh with no safety net, so a server's SSH service is warned of; beta:dns is reached by no rule.
    const MESH = 'mesh: { name: m, coordinator: https://c.example.net }\nacl:\n  - { from: [alpha], to: [beta:web, beta:ssh] }\n';
    const nodes = (beta: string, extra = '') =>
      `nodes:\n  - { name: alpha, kind: server, listen: 10.0.0.1:7946, services: [{ name: metrics, port: 9100 }] }\n${extra}  - name: beta\n    kind: server\n    listen: 10.0.0.2:7946\n    services:\n${beta}`;
    const BETA = '      - { name: web, port: 443 }\n      - { name: dns, port: 53 }\n      - { name: ssh, port: 22 }\n';
    /** The warnings of nodes.yaml as a compile's record keeps them, from a validation of the whole rete. */
    const warningsOf = (text: string): KeptDiagnostic[] => {
      const { rete, diagnostics } = validateRete([
        { file: 'rete.yaml', text: MESH },
        { file: 'nodes.yaml', text },
      ]);
      expect(rete).toBeDefined();
      return diagnostics
        .filter((d) => d.file === 'nodes.yaml')
        .map((d) => ({ file: d.file, text: formatDiagnostic(d), path: d.path, line: d.line, col: d.col }));
    };
    /** editedWarnings for nodes.yaml edited from `was` to `now`. */
    const edited = (was: string, now: string): KeptDiagnostic[] | undefined => {
      const before = parseFile({ file: 'nodes.yaml', text: was }).parsed;
      const after = parseFile({ file: 'nodes.yaml', text: now }).parsed;
      const edits = before && after && localEdits(before.data, after.data);
      if (!before || !after || !edits) throw new Error('not a local edit');
      return editedWarnings(warningsOf(was), before.data, after, edits);
    };

    it('are what validating the whole rete again gives, for each edit the quick path takes', () => {
      const was = nodes(BETA);
      expect(warningsOf(was).map((w) => w.text)).toEqual([
        expect.stringMatching(/^nodes\.yaml:2:\d+: nodes\[0\]\.services\[0\]: warning: .*alpha:metrics \[unused_service\]$/),
        expect.stringMatching(/^nodes\.yaml:8:\d+: nodes\[1\]\.services\[1\]: warning: .*beta:dns \[unused_service\]$/),
        expect.stringMatching(
          /^nodes\.yaml:9:\d+: nodes\[1\]\.services\[2\]: warning: server "beta" publishes SSH \(service "ssh", port 22\).*\[no_safety_net\]$/,
        ),
      ]);
      const edits: [string, string][] = [
        ['a service more', BETA.replace('port: 443 }\n', 'port: 443 }\n      - { name: ntp, port: 123, protocol: udp }\n')],
        ['an unused service removed', BETA.replace('      - { name: dns, port: 53 }\n', '')],
        ['an unused service renamed', BETA.replace('name: dns', 'name: resolver')],
        ['services reordered', '      - { name: ssh, port: 22 }\n      - { name: dns, port: 53 }\n      - { name: web, port: 443 }\n'],
        ["SSH's port moved", BETA.replace('port: 22', 'port: 2222')],
        ['a port moved', BETA.replace('port: 53', 'port: 5353')],
      ];
      for (const [what, beta] of edits) {
        const now = nodes(beta);
        expect([what, edited(was, now)]).toEqual([what, warningsOf(now)]);
      }
      // Lines added above: every warning below is placed where it now is, alpha's node edited too.
      const above = nodes(BETA, '  # the next node\n\n').replace('10.0.0.1:7946', '10.0.0.1:7000');
      expect(edited(was, above)).toEqual(warningsOf(above));
      expect(edited(was, above)?.map((w) => w.line)).toEqual([2, 10, 11]);
    });

    it("are in validation's order when two warnings share a place: services one alias lists, edited through its anchor", () => {
      // gw2's services are gw1's, through an alias: both of gw2's warnings are placed where the alias is, and validation
      // orders two warnings of one place and one code by their text (sortDiagnostics): gw2:dns before gw2:web.
      const gateways = (dns: number) =>
        `  - name: gw1\n    kind: device\n    listen: 10.0.0.5:7946\n    services: &edge\n      - { name: web, port: 80 }\n      - { name: dns, port: ${dns} }\n` +
        '  - name: gw2\n    kind: device\n    listen: 10.0.0.6:7946\n    services: *edge\n';
      const [was, now] = [nodes(BETA, gateways(53)), nodes(BETA, gateways(5353))];
      const gw2 = (text: string) => warningsOf(text).filter((w) => w.text.includes('gw2:'));
      expect(gw2(now).map((w) => [w.line, w.col, w.text.replace(/^.*reach /, '')])).toEqual([
        [12, 15, 'gw2:dns [unused_service]'],
        [12, 15, 'gw2:web [unused_service]'],
      ]);
      // A port moved in the anchor: gw1 and gw2 both edited, and their warnings made again in the services' order.
      expect(edited(was, now)).toEqual(warningsOf(now));
    });

    it('are not known when a removed service may be named by a rule, a server gains SSH, or a warning has no place', () => {
      const was = nodes(BETA);
      // web is reached: the rule naming it would be an error, which only validating everything reports.
      expect(edited(was, nodes(BETA.replace('      - { name: web, port: 443 }\n', '')))).toBeUndefined();
      expect(edited(was, nodes(BETA.replace('name: web', 'name: www')))).toBeUndefined();
      // A new SSH service, or dns moved onto SSH's port: whether the mesh has a safety net is not in this file.
      expect(edited(was, nodes(`${BETA}      - { name: ssh2, port: 22, protocol: udp }\n`))).toBeUndefined();
      expect(edited(was, nodes(BETA.replace('port: 53', 'port: 22, protocol: udp')))).toBeUndefined();
      // A record of an earlier retectl, which kept no place.
      const before = parseFile({ file: 'nodes.yaml', text: was }).parsed;
      const after = parseFile({ file: 'nodes.yaml', text: nodes(BETA.replace('port: 53', 'port: 5353')) }).parsed;
      if (!before || !after) throw new Error('unparsed');
      const edits = localEdits(before.data, after.data) as LocalEdits;
      expect(editedWarnings(warningsOf(was), before.data, after, edits)).toBeDefined();
      const placeless = warningsOf(was).map(({ file, text }) => ({ file, text }));
      expect(editedWarnings(placeless, before.data, after, edits)).toBeUndefined();
    });
  });
});
