import { AGENT_JSON, fileArtifactName, FLOR_JSON, RESOURCES_JSON, type AgentJson, type FlorJson, type ResourcesJson } from '#contracts/files';
import { cmp } from './diagnostics.js';
import type { AclSource, NodeResources, Rete, ReteNodeModel, SyncSeconds } from './model.js';
import { presortedPretty, sortedPretty } from './sorted-json.js';

/** An artifact's exact bytes: text (UTF-8) for the JSON artifacts, raw bytes for file contents. */
export type ArtifactBytes = string | Uint8Array;
/** Node name → artifact file name → exact bytes of the compiled artifact. */
export type CompiledTree = ReadonlyMap<string, ReadonlyMap<string, ArtifactBytes>>;

/**
 * Compiles a checked rete into each node's agent.json and flor.json, and for a node with host
 * resources its resources.json and one `file-<sha256>` artifact per distinct file content. The output
 * is canonical JSON (sorted keys, two-space indent, one trailing newline: libs/bundle's canonicalPretty), and every list that is a set is sorted, so the bytes depend
 * only on what the rete means: not on file order, key order or the order rules were written in.
 * Resources are the exception on purpose: they keep their declaration order, the order to apply them.
 */
export function compileRete(rete: Rete): CompiledTree {
  return new Map(compileNodes(rete));
}

/**
 * compileRete one node at a time, in the rete's node order: a caller that writes each node as it
 * comes never holds the artifacts of a large rete all at once.
 */
export function* compileNodes(rete: Rete): Generator<[string, ReadonlyMap<string, ArtifactBytes>]> {
  const byName = new Map(rete.nodes.map((n) => [n.name, n]));
  // Every tag's nodes, found once: a rule's `tag:` source is resolved per rule, and a fleet has many.
  const tagged = new Map<string, string[]>();
  for (const n of rete.nodes) {
    for (const t of n.tags) {
      const list = tagged.get(t);
      if (list) list.push(n.name);
      else tagged.set(t, [n.name]);
    }
  }
  const resolve = (s: AclSource): readonly string[] => {
    switch (s.kind) {
      case 'node':
        return [s.name];
      case 'group':
        return rete.groups.get(s.name) ?? [];
      case 'tag':
        return tagged.get(s.name) ?? [];
      default: {
        const unreachable: never = s.kind;
        throw new TypeError(`unknown ACL source kind ${String(unreachable)}`);
      }
    }
  };

  const ingress = new Map<string, Map<string, Set<string>>>();
  // Per node, the nodes it may open and, of each, which services.
  const egress = new Map<string, Map<string, Set<string>>>();
  for (const n of rete.nodes) {
    ingress.set(n.name, new Map(n.services.map((s) => [s.name, new Set<string>()])));
    egress.set(n.name, new Map());
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
        const opens = egress.get(source);
        if (!opens) continue;
        const services = opens.get(target.node);
        if (services) services.add(target.service);
        else opens.set(target.node, new Set([target.service]));
      }
    }
  }

  const resources = resourcesWriter();
  for (const n of rete.nodes) {
    const ins = ingress.get(n.name) as Map<string, Set<string>>;
    const opens = egress.get(n.name) as Map<string, Set<string>>;
    const outs: { node: string; service: string }[] = [];
    for (const node of [...opens.keys()].sort(cmp)) for (const service of [...(opens.get(node) as Set<string>)].sort(cmp)) outs.push({ node, service });
    // Peers are exactly the nodes the allow lists name: they go under acl so that granting or
    // revoking access, which changes them too, stays a swap for the vertex and never a restart.
    const peerNames = new Set<string>(opens.keys());
    for (const allow of ins.values()) for (const p of allow) peerNames.add(p);
    // Built from a checked rete, so valid by construction (the contracts' schemas hold them in the
    // tests), and every object's keys written in canonical order, so one JSON.stringify writes the
    // canonical text; the tests hold that too.
    const agent: AgentJson = {
      coordinator: rete.mesh.coordinator,
      mesh: rete.mesh.name,
      node: n.name,
      sync: agentSync(n.sync),
    };
    const flor: FlorJson = {
      acl: {
        egress: outs,
        ingress: Object.fromEntries([...ins].sort(([a], [b]) => cmp(a, b)).map(([svc, allow]) => [svc, [...allow].sort(cmp)])),
        peers: [...peerNames].sort(cmp).map((p) => ({ listen: (byName.get(p) as { listen: string }).listen, node: p })),
      },
      listen: n.listen,
      mesh: rete.mesh.name,
      node: n.name,
      services: florServices(n.services),
    };
    yield [n.name, new Map<string, ArtifactBytes>([[AGENT_JSON, agentJsonText(agent)], [FLOR_JSON, presortedPretty(flor)], ...resources(n.resources)])];
  }
}

/**
 * A node's sync as its agent.json carries it. Only a node with a window gets its keys, and watch is
 * written only when turned off: every other node's agent.json keeps its exact bytes. Undefined keys
 * are left out of the text.
 */
export function agentSync(sync: SyncSeconds): AgentJson['sync'] {
  return {
    confirm_within: sync.confirm_within,
    health_checks: sync.health_checks && [...sync.health_checks],
    poll_interval: sync.poll_interval,
    splay: sync.splay,
    watch: sync.watch ? undefined : false,
  };
}

/** An agent.json's canonical text, from an object whose keys are in canonical order but the health checks'. */
export function agentJsonText(agent: AgentJson): string {
  // A health check's keys vary with its kind: the one place the general sort is needed.
  return agent.sync.health_checks ? sortedPretty(agent) : presortedPretty(agent);
}

/** A node's services as its flor.json lists them: by name. */
export function florServices(services: ReteNodeModel['services']): FlorJson['services'] {
  return [...services].sort((a, b) => cmp(a.name, b.name)).map((s) => ({ name: s.name, port: s.port, protocol: s.protocol }));
}

/**
 * A node's resources.json and file contents: nothing for a node without resources, so its set (and
 * its version) stays as it was before resources existed. Nodes that a selector gives the same
 * declarations share those objects, so their resources.json is written once for all of them.
 */
function resourcesWriter(): (r: NodeResources) => [string, ArtifactBytes][] {
  const ids = new Map<object, number>();
  const idOf = (o: object): number => {
    let id = ids.get(o);
    if (id === undefined) ids.set(o, (id = ids.size));
    return id;
  };
  const texts = new Map<string, string>();
  return (r) => {
    if (r.files.length === 0 && r.packages.length === 0) return [];
    const key = `${r.files.map(idOf).join(',')}|${r.packages.map(idOf).join(',')}`;
    let text = texts.get(key);
    if (text === undefined) {
      const json: ResourcesJson = {
        files: r.files.map((f) => ({ content: { sha256: f.sha256, size: f.content.byteLength }, group: f.group, mode: f.mode, owner: f.owner, path: f.path })),
        packages: r.packages.map((p) => ({ manager: p.manager, name: p.name, version: p.version })),
      };
      texts.set(key, (text = presortedPretty(json)));
    }
    const contents = new Map(r.files.map((f) => [fileArtifactName(f.sha256), f.content] as const));
    return [[RESOURCES_JSON, text], ...contents];
  };
}
