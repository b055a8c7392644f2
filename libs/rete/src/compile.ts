import { AGENT_JSON, AgentJson, FLOR_JSON, FlorJson } from '#contracts';
import { canonicalPretty } from '#bundle';
import { cmp } from './diagnostics.js';
import type { AclSource, Rete } from './model.js';

/** Node name → artifact file name → exact bytes (as text) of the compiled artifact. */
export type CompiledTree = ReadonlyMap<string, ReadonlyMap<string, string>>;

/**
 * Compiles a checked rete into each node's agent.json and flor.json. The output is canonical JSON
 * (DESIGN section 5), and every list is sorted, so the bytes depend only on what the rete means:
 * not on file order, key order or the order rules were written in.
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

  const tree = new Map<string, Map<string, string>>();
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
      sync: { poll_interval: n.sync.poll_interval, splay: n.sync.splay },
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
    tree.set(n.name, new Map([[AGENT_JSON, canonicalPretty(agent)], [FLOR_JSON, canonicalPretty(flor)]]));
  }
  return tree;
}
