import { z } from 'zod';
import { NodeName } from './primitives.schema.js';

/**
 * The compiled per-node artifacts retectl writes to .flor/compiled/<node>/mgmt/ and the coordinator
 * serves inside bundles. On disk they are canonical JSON pretty-printed (libs/bundle canonicalPretty).
 */

export const ServiceName = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a DNS label');
export const Protocol = z.enum(['tcp', 'udp']);
/** host:port, with IPv6 hosts in brackets. */
export const ListenAddress = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/, 'must be host:port').refine((s) => {
  const port = Number(s.slice(s.lastIndexOf(':') + 1));
  return port >= 1 && port <= 65535;
}, 'port must be 1-65535');

/** agent.json: what the node's agent needs to run its sync loop. Durations are whole seconds. */
export const AgentJson = z.strictObject({
  node: NodeName,
  mesh: z.string().min(1),
  coordinator: z.string().url(),
  sync: z.strictObject({
    poll_interval: z.number().int().positive(),
    splay: z.number().int().nonnegative(),
  }),
});
export type AgentJson = z.infer<typeof AgentJson>;

export const FlorService = z.strictObject({ name: ServiceName, port: z.number().int().min(1).max(65535), protocol: Protocol });
/** A node this vertex may exchange traffic with, and where to reach it. */
export const FlorPeer = z.strictObject({ node: NodeName, listen: ListenAddress });

/**
 * Everything in flor.json that follows from the rete's allow lists, kept apart from the structural
 * fields so a vertex can swap it as one table without a restart (DESIGN section 7). Ingress: per
 * published service, the nodes allowed in. Egress: the node:service pairs this node may open. Peers:
 * the nodes those lists name, with where to reach them; a grant or a revocation changes this set as
 * surely as it changes the lists, so it lives and is swapped with them.
 */
export const FlorAcl = z
  .strictObject({
    ingress: z.record(ServiceName, z.array(NodeName)),
    egress: z.array(z.strictObject({ node: NodeName, service: ServiceName })),
    peers: z.array(FlorPeer),
  })
  .superRefine((acl, ctx) => {
    const peers = new Set<string>();
    acl.peers.forEach((p, i) => {
      if (peers.has(p.node)) ctx.addIssue({ code: 'custom', path: ['peers', i, 'node'], message: `${p.node} is listed twice` });
      peers.add(p.node);
    });
    // A node an allow list names but the vertex has no entry for could be let in yet never reached.
    for (const [service, from] of Object.entries(acl.ingress)) {
      from.forEach((node, i) => {
        if (!peers.has(node)) ctx.addIssue({ code: 'custom', path: ['ingress', service, i], message: `${node} is not in peers` });
      });
    }
    acl.egress.forEach((e, i) => {
      if (!peers.has(e.node)) ctx.addIssue({ code: 'custom', path: ['egress', i, 'node'], message: `${e.node} is not in peers` });
    });
  });
export type FlorAcl = z.infer<typeof FlorAcl>;

/** flor.json: the vertex configuration. */
export const FlorJson = z.strictObject({
  node: NodeName,
  mesh: z.string().min(1),
  listen: ListenAddress,
  services: z.array(FlorService),
  acl: FlorAcl,
});
export type FlorJson = z.infer<typeof FlorJson>;

/** The artifact file names a compiled node folder holds under mgmt/. */
export const AGENT_JSON = 'agent.json';
export const FLOR_JSON = 'flor.json';
