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
export const FlorPeer = z.strictObject({ node: NodeName, listen: ListenAddress });

/**
 * The vertex's allow lists, kept apart from the structural fields so a vertex can swap them as one
 * table without a restart (DESIGN section 7). Ingress: per published service, the peers allowed in.
 * Egress: the node:service pairs this node may open.
 */
export const FlorAcl = z.strictObject({
  ingress: z.record(ServiceName, z.array(NodeName)),
  egress: z.array(z.strictObject({ node: NodeName, service: ServiceName })),
});

/** flor.json: the vertex configuration. */
export const FlorJson = z.strictObject({
  node: NodeName,
  mesh: z.string().min(1),
  listen: ListenAddress,
  services: z.array(FlorService),
  peers: z.array(FlorPeer),
  acl: FlorAcl,
});
export type FlorJson = z.infer<typeof FlorJson>;

/** The artifact file names a compiled node folder holds under mgmt/. */
export const AGENT_JSON = 'agent.json';
export const FLOR_JSON = 'flor.json';
