// A generated fleet, the rete an operator of a large mesh would write: what the benchmarks compile,
// publish and parse, and what the rete's own tests read. Not exported from the library (#rete): only
// the benchmarks and tests import it, so nothing an operator runs loads it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Nodes per site, and per file: a rete grows one file per site. */
export const SITE_SIZE = 1000;

export function fleetNodeName(i: number): string {
  return `node-${String(i + 1).padStart(6, '0')}`;
}

const siteOf = (i: number): number => Math.floor(i / SITE_SIZE);
const siteFile = (site: number): string => `sites/site-${String(site + 1).padStart(3, '0')}.yaml`;

/**
 * Each site's first node is its monitor, the next two its databases, the rest web servers; every
 * node publishes its metrics, and the databases postgres.
 */
function role(i: number): 'monitor' | 'db' | 'web' {
  const k = i % SITE_SIZE;
  return k < 1 ? 'monitor' : k < 3 ? 'db' : 'web';
}

function nodeLines(i: number, generation: number): string[] {
  const site = `site-${siteOf(i) + 1}`;
  const r = role(i);
  const lines = [
    `  - name: ${fleetNodeName(i)}`,
    '    kind: server',
    `    listen: 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:${7946 + generation}`,
    `    tags: [${r}, ${site}, ${site}-${r}]`,
    '    services:',
    '      - { name: metrics, port: 9100 }',
  ];
  if (r === 'db') lines.push('      - { name: postgres, port: 5432 }');
  return lines;
}

/**
 * The YAML files of a fleet of `nodes` servers as an operator would write it: one mesh file, one
 * file per site of SITE_SIZE nodes with the site's ACL (its monitor reaches every node's metrics,
 * its web servers its databases), and a message of the day on every web server selected by tag.
 * `changed` is a node whose listen port moves: the one-change recompile.
 */
export function fleetRete(nodes: number, changed?: number): Map<string, string> {
  const files = new Map<string, string>();
  files.set(
    'rete.yaml',
    [
      'mesh:',
      '  name: fleet',
      '  coordinator: https://coordinator.bench.invalid',
      '  safety_net: provider serial console',
      'defaults:',
      '  sync: { poll_interval: 5m, splay: 30s }',
      'resources:',
      '  - select: { tags: [web] }',
      '    files:',
      '      - { path: /etc/motd, content: "managed by Florete\\n", mode: "0644" }',
      '',
    ].join('\n'),
  );
  for (let start = 0; start < nodes; start += SITE_SIZE) {
    const end = Math.min(nodes, start + SITE_SIZE);
    const site = `site-${siteOf(start) + 1}`;
    const lines = ['nodes:'];
    const targets: { metrics: string[]; db: string[] } = { metrics: [], db: [] };
    for (let i = start; i < end; i++) {
      lines.push(...nodeLines(i, i === changed ? 1 : 0));
      targets.metrics.push(`${fleetNodeName(i)}:metrics`);
      if (role(i) === 'db') targets.db.push(`${fleetNodeName(i)}:postgres`);
    }
    lines.push('acl:', `  - from: [tag:${site}-monitor]`, `    to: [${targets.metrics.join(', ')}]`);
    // A last site too small to have web servers or databases has no rule for them.
    if (targets.db.length > 0 && end - start > 3) lines.push(`  - from: [tag:${site}-web]`, `    to: [${targets.db.join(', ')}]`);
    lines.push('');
    files.set(siteFile(siteOf(start)), lines.join('\n'));
  }
  return files;
}

/** The file that holds node `i`. */
export const fleetFileOf = (i: number): string => siteFile(siteOf(i));

export function writeRete(dir: string, files: ReadonlyMap<string, string>): void {
  for (const [name, text] of files) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}
