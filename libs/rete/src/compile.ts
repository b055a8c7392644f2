import { AGENT_JSON, AgentJson, fileArtifactName, FLOR_JSON, FlorJson, RESOURCES_JSON, ResourcesJson } from '#contracts';
import { canonicalPretty } from '#bundle';
import { cmp } from './diagnostics.js';
import type { AclSource, NodeResources, Rete } from './model.js';

/** An artifact's exact bytes: text (UTF-8) for the JSON artifacts, raw bytes for file contents. */
export type ArtifactBytes = string | Uint8Array;
/** Node name → artifact file name → exact bytes of the compiled artifact. */
export type CompiledTree = ReadonlyMap<string, ReadonlyMap<string, ArtifactBytes>>;

/**
 * Compiles a checked rete into each node's agent.json and flor.json, and for a node with host
 * resources its resources.json and one `file-<sha256>` artifact per distinct file content. The output
 * is canonical JSON (sorted keys, two-space indent, one trailing newline: libs/bundle), and every list that is a set is sorted, so the bytes depend
 * only on what the rete means: not on file order, key order or the order rules were written in.
 * Resources are the exception on purpose: they keep their declaration order, the order to apply them.
 */
export function compileRete(rete: Rete): CompiledTree {
  const byName = new Map(rete.nodes.map((n) => [n.name, n]));
  const resolve = (s: AclSource): readonly string[] => {
    switch (s.kind) {
      case 'node':
        return [s.name];
      case 'group':
        return rete.groups.get(s.name) ?? [];
      case 'tag':
        return rete.nodes.filter((n) => n.tags.includes(s.name)).map((n) => n.name);
      default: {
        const unreachable: never = s.kind;
        throw new TypeError(`unknown ACL source kind ${String(unreachable)}`);
      }
    }
  };

  const ingress = new Map<string, Map<string, Set<string>>>();
  const egress = new Map<string, Set<string>>();
  for (const n of rete.nodes) {
    ingress.set(n.name, new Map(n.services.map((s) => [s.name, new Set<string>()])));
    egress.set(n.name, new Set());
  }
  for (const rule of rete.acl) {
    const sources = new Set(rule.from.flatMap(resolve));
    for (const target of rule.to) {
      const allow = ingress.get(target.node)?.get(target.service);
      if (!allow) throw new TypeError(`compile: ACL target ${target.node}:${target.service} was not validated`);
      // A node always reaches its own services; listing it would only add noise to both tables.
      for (const source of sources) {
        if (source === target.node) continue;
        allow.add(source);
        egress.get(source)?.add(`${target.node}\u0000${target.service}`);
      }
    }
  }

  const tree = new Map<string, Map<string, ArtifactBytes>>();
  for (const n of rete.nodes) {
    const ins = ingress.get(n.name) as Map<string, Set<string>>;
    const outs = [...(egress.get(n.name) as Set<string>)].map((k) => {
      const [node, service] = k.split('\u0000');
      return { node, service };
    });
    outs.sort((a, b) => cmp(a.node, b.node) || cmp(a.service, b.service));
    // Peers are exactly the nodes the allow lists name: they go under acl so that granting or
    // revoking access, which changes them too, stays a swap for the vertex and never a restart.
    const peerNames = new Set<string>(outs.map((o) => o.node));
    for (const allow of ins.values()) for (const p of allow) peerNames.add(p);
    const agent: AgentJson = AgentJson.parse({
      node: n.name,
      mesh: rete.mesh.name,
      coordinator: rete.mesh.coordinator,
      // Only a node with a window gets its keys, and watch is written only when turned off: every
      // other node's agent.json keeps its exact bytes.
      sync: {
        poll_interval: n.sync.poll_interval,
        splay: n.sync.splay,
        ...(n.sync.watch ? {} : { watch: false }),
        ...(n.sync.confirm_within !== undefined ? { confirm_within: n.sync.confirm_within } : {}),
        ...(n.sync.health_checks !== undefined ? { health_checks: n.sync.health_checks } : {}),
      },
    });
    const flor: FlorJson = FlorJson.parse({
      node: n.name,
      mesh: rete.mesh.name,
      listen: n.listen,
      services: [...n.services].sort((a, b) => cmp(a.name, b.name)).map((s) => ({ name: s.name, port: s.port, protocol: s.protocol })),
      acl: {
        ingress: Object.fromEntries([...ins].sort(([a], [b]) => cmp(a, b)).map(([svc, allow]) => [svc, [...allow].sort(cmp)])),
        egress: outs,
        peers: [...peerNames].sort(cmp).map((p) => ({ node: p, listen: (byName.get(p) as { listen: string }).listen })),
      },
    });
    tree.set(n.name, new Map<string, ArtifactBytes>([[AGENT_JSON, canonicalPretty(agent)], [FLOR_JSON, canonicalPretty(flor)], ...resourceArtifacts(n.resources)]));
  }
  return tree;
}

/** Nothing for a node without resources, so its set (and its version) stays as it was before resources existed. */
function resourceArtifacts(r: NodeResources): [string, ArtifactBytes][] {
  if (r.files.length === 0 && r.packages.length === 0) return [];
  const json: ResourcesJson = ResourcesJson.parse({
    files: r.files.map((f) => ({ path: f.path, mode: f.mode, owner: f.owner, group: f.group, content: { sha256: f.sha256, size: f.content.byteLength } })),
    packages: r.packages.map((p) => ({ manager: p.manager, name: p.name, version: p.version })),
  });
  const contents = new Map(r.files.map((f) => [fileArtifactName(f.sha256), f.content] as const));
  return [[RESOURCES_JSON, canonicalPretty(json)], ...contents];
}
