import fc from 'fast-check';
import { stringify } from 'yaml';
import type { Source } from './parse-file.js';

/** A valid rete by construction, as plain data: what the property tests render in many layouts. */
export interface ReteSpec {
  readonly mesh: { name: string; coordinator: string };
  readonly defaults?: { sync: { poll_interval: string; splay: string } };
  readonly nodes: readonly Record<string, unknown>[];
  readonly groups: readonly { name: string; members: string[] }[];
  readonly acl: readonly { from: string[]; to: string[] }[];
}

const NODE_POOL = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'n-7', '0day'];
const TAG_POOL = ['web', 'db', 'ops', 'edge'];
const SERVICE_POOL = [
  { name: 'web', port: 443, protocol: 'tcp' },
  { name: 'ssh', port: 22 },
  { name: 'dns', port: 53, protocol: 'udp' },
  { name: 'metrics', port: 9100, protocol: 'tcp' },
];
const GROUP_POOL = ['ops', 'devs', 'all'];
const FILE_POOL = [
  { path: '/etc/motd', content: 'managed by florete\n' },
  { path: '/etc/issue', content: 'managed by florete\n', mode: '0600' },
  { path: '/srv/app/app.conf', content: 'x = 1\n', owner: 'www-data', group: 'www-data', mode: '640' },
  { path: '/etc/empty', content: '' },
];
const PACKAGE_POOL = [
  { name: 'nginx', version: '1.22.1-9+deb12u11' },
  { name: 'curl', version: '7.88.1-10+deb12u8', manager: 'apt' },
  { name: 'florete-agent', version: '1:0.2.0' },
];

export const reteSpec: fc.Arbitrary<ReteSpec> = fc
  .record({
    names: fc.uniqueArray(fc.constantFrom(...NODE_POOL), { minLength: 1, maxLength: NODE_POOL.length }),
    meshName: fc.constantFrom('example', 'lab', 'prod-eu'),
    defaults: fc.option(fc.record({ poll_interval: fc.constantFrom('5m', '1h', '90s', '1h30m'), splay: fc.constantFrom('0s', '30s', '1m') }), {
      nil: undefined,
    }),
  })
  .chain(({ names, meshName, defaults }) =>
    fc
      .record({
        nodes: fc.tuple(
          ...names.map((name, i) =>
            fc
              .record({
                kind: fc.constantFrom('server', 'device'),
                tags: fc.subarray(TAG_POOL),
                services: fc.subarray(SERVICE_POOL),
                sync: fc.option(fc.record({ poll_interval: fc.constantFrom('2m', '10m') }), { nil: undefined }),
                // Resources keep the order they are written in (the order to apply them): part of the spec, not of the layout.
                resources: fc.option(fc.record({ files: fc.shuffledSubarray(FILE_POOL), packages: fc.shuffledSubarray(PACKAGE_POOL) }), { nil: undefined }),
              })
              .map((n) => ({
                name,
                listen: `10.0.${i}.1:${7000 + i}`,
                ...n,
                ...(n.sync ? {} : { sync: undefined }),
                ...(n.resources ? {} : { resources: undefined }),
              })),
          ),
        ),
        groupNames: fc.subarray(GROUP_POOL),
      })
      .chain(({ nodes, groupNames }) => {
        const groups = fc.tuple(...groupNames.map((g) => fc.subarray(names).map((members) => ({ name: g, members }))));
        const tags = [...new Set(nodes.flatMap((n) => n.tags))];
        const sources = [...names, ...groupNames.map((g) => `group:${g}`), ...tags.map((t) => `tag:${t}`)];
        const targets = nodes.flatMap((n) => n.services.map((s) => `${n.name}:${s.name}`));
        const rule = () => fc.record({ from: fc.subarray(sources, { minLength: 1 }), to: fc.subarray(targets, { minLength: 1 }) });
        const acl = targets.length === 0 ? fc.constant([]) : fc.array(rule(), { maxLength: 4 });
        return fc.record({ groups, acl }).map(({ groups: gs, acl: rules }) => ({
          mesh: { name: meshName, coordinator: 'https://coordinator.example.net' },
          ...(defaults ? { defaults: { sync: defaults } } : {}),
          nodes: nodes.map((n) => Object.fromEntries(Object.entries(n).filter(([, v]) => v !== undefined))),
          groups: gs,
          acl: rules,
        }));
      }),
  );

/** How one rete is laid out: how many files, which file holds what, and a seed for every order. */
export interface Layout {
  readonly files: number;
  readonly seed: number;
}
export const layout: fc.Arbitrary<Layout> = fc.record({ files: fc.integer({ min: 1, max: 4 }), seed: fc.integer({ min: 1, max: 2 ** 30 }) });

/**
 * Renders a spec as YAML files: definitions spread over files and folders, every mapping's keys and
 * every set-like list (tags, members, services, rules, from, to) in a seed-chosen order.
 */
export function render(spec: ReteSpec, l: Layout): Source[] {
  let state = l.seed;
  const rand = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
  const shuffle = <T>(list: readonly T[]): T[] => {
    const out = [...list];
    for (let i = out.length - 1; i > 0; i--) {
      const j = rand(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  };
  const scramble = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(scramble);
    if (v && typeof v === 'object') return Object.fromEntries(shuffle(Object.entries(v)).map(([k, x]) => [k, scramble(x)]));
    return v;
  };
  const files: Record<string, unknown[]>[] = Array.from({ length: l.files }, () => ({}));
  const put = (section: string, item: unknown) => {
    const f = files[rand(l.files)];
    (f[section] ??= []).push(item);
  };
  for (const n of shuffle(spec.nodes)) {
    const node = { ...n } as Record<string, unknown>;
    if (Array.isArray(node.tags)) node.tags = shuffle(node.tags as string[]);
    if (Array.isArray(node.services)) node.services = shuffle(node.services as unknown[]);
    put('nodes', node);
  }
  for (const g of shuffle(spec.groups)) put('groups', { ...g, members: shuffle(g.members) });
  for (const r of shuffle(spec.acl)) put('acl', { from: shuffle(r.from), to: shuffle(r.to) });
  const singles: Record<string, unknown>[] = files.map(() => ({}));
  singles[rand(l.files)].mesh = spec.mesh;
  if (spec.defaults) singles[rand(l.files)].defaults = spec.defaults;
  const sources = files.map((f, i) => ({
    file: `${['', 'sub/', 'a/b/'][i % 3]}part-${i}.yaml`,
    text: stringify(scramble({ ...singles[i], ...f }) ?? {}),
  }));
  return shuffle(sources);
}
