import { z } from 'zod';
import { AGENT_HOST_PATHS, agentPathAt, CANONICAL_FILE_MODE, DEBIAN_PACKAGE_NAME, HostPath, isDebianVersion, PosixName } from './host.schema.js';
import { NodeName, Sha256 } from './primitives.schema.js';

/**
 * The compiled per-node artifacts retectl writes into .flor/compiled (each node's entry in a pack) and the coordinator
 * serves inside bundles. On disk they are canonical JSON pretty-printed (libs/bundle canonicalPretty).
 */

export const ServiceName = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a DNS label');
export const Protocol = z.enum(['tcp', 'udp']);
/** host:port, with IPv6 hosts in brackets. */
export const ListenAddress = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/, 'must be host:port')
  .refine((s) => {
    const port = Number(s.slice(s.lastIndexOf(':') + 1));
    return port >= 1 && port <= 65535;
  }, 'port must be 1-65535');

/**
 * A health check the agent runs after activating a set under a confirmation window: a command that
 * must exit 0, a TCP connect, or an HTTP(S) GET that must answer `expect_status`. Each is stopped,
 * and counts as failed, after `timeout` seconds.
 */
export const HealthCheck = z.discriminatedUnion('kind', [
  z.strictObject({ name: ServiceName, kind: z.literal('command'), command: z.string().min(1), timeout: z.number().int().positive() }),
  z.strictObject({ name: ServiceName, kind: z.literal('tcp'), address: ListenAddress, timeout: z.number().int().positive() }),
  z.strictObject({
    name: ServiceName,
    kind: z.literal('http'),
    url: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL'),
    expect_status: z.number().int().min(100).max(599),
    timeout: z.number().int().positive(),
  }),
]);
export type HealthCheck = z.infer<typeof HealthCheck>;

/** agent.json: what the node's agent needs to run its sync loop. Durations are whole seconds. */
export const AgentJson = z.strictObject({
  node: NodeName,
  mesh: z.string().min(1),
  coordinator: z.string().url(),
  sync: z.strictObject({
    poll_interval: z.number().int().positive(),
    splay: z.number().int().nonnegative(),
    /**
     * Commit-confirmed: the set stays provisional this long after its activation, and the agent goes
     * back to the set before it unless the checks passed and it reached the coordinator again.
     * Absent: a set is final once activated.
     */
    confirm_within: z.number().int().positive().optional(),
    health_checks: z.array(HealthCheck).min(1).optional(),
    /**
     * Whether the agent watches its bundle (holds a poll open until it changes) between polls. Absent
     * means on: only a rete that turns it off writes it, so existing sets keep their digests.
     */
    watch: z.boolean().optional(),
  }),
});
export type AgentJson = z.infer<typeof AgentJson>;

export const FlorService = z.strictObject({ name: ServiceName, port: z.number().int().min(1).max(65535), protocol: Protocol });
/** A node this vertex may exchange traffic with, and where to reach it. */
export const FlorPeer = z.strictObject({ node: NodeName, listen: ListenAddress });

/**
 * Everything in flor.json that follows from the rete's allow lists, kept apart from the structural
 * fields so a vertex can swap it as one table without a restart (hot reload: libs/vertex-control/README.md). Ingress: per
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

/** A file's bytes, carried as the node's artifact `file-<sha256>` (fileArtifactName). */
export const FileContentRef = z.strictObject({ sha256: Sha256, size: z.number().int().nonnegative() });

export const FileResource = z.strictObject({
  path: HostPath,
  mode: z.string().regex(CANONICAL_FILE_MODE, 'must be four octal digits such as "0644"'),
  owner: PosixName,
  group: PosixName,
  content: FileContentRef,
});
export type FileResource = z.infer<typeof FileResource>;

/** One member per package manager, told apart by `manager`; each checks names and versions its own way. */
export const AptPackage = z.strictObject({
  manager: z.literal('apt'),
  name: z.string().regex(DEBIAN_PACKAGE_NAME, 'must be a Debian package name'),
  version: z.string().refine(isDebianVersion, 'must be an exact Debian version'),
});
export const PackageResource = z.discriminatedUnion('manager', [AptPackage]);
export type PackageResource = z.infer<typeof PackageResource>;

/**
 * resources.json: what the node's host must hold, files first, then packages, each list in the rete's
 * declaration order (the order to apply them in). A node without resources has no resources.json.
 * Paths are unique, none lies inside another file's path and none touches the agent's own folders;
 * a package appears once per manager.
 */
export const ResourcesJson = z
  .strictObject({
    files: z.array(FileResource),
    packages: z.array(PackageResource),
  })
  .superRefine((r, ctx) => {
    const paths = new Set(r.files.map((f) => f.path));
    const seen = new Set<string>();
    r.files.forEach((f, i) => {
      if (seen.has(f.path)) ctx.addIssue({ code: 'custom', path: ['files', i, 'path'], message: `${f.path} is listed twice` });
      seen.add(f.path);
      for (let cut = f.path.lastIndexOf('/'); cut > 0; cut = f.path.lastIndexOf('/', cut - 1)) {
        if (paths.has(f.path.slice(0, cut)))
          ctx.addIssue({ code: 'custom', path: ['files', i, 'path'], message: `${f.path} lies inside the file ${f.path.slice(0, cut)}` });
      }
      const agent = agentPathAt(f.path);
      if (agent)
        ctx.addIssue({
          code: 'custom',
          path: ['files', i, 'path'],
          message: `${f.path} would overwrite the agent's own ${agent} (reserved: ${AGENT_HOST_PATHS.join(', ')})`,
        });
    });
    const packages = new Set<string>();
    r.packages.forEach((p, i) => {
      const key = `${p.manager}:${p.name}`;
      if (packages.has(key)) ctx.addIssue({ code: 'custom', path: ['packages', i, 'name'], message: `${p.manager} package ${p.name} is listed twice` });
      packages.add(key);
    });
  });
export type ResourcesJson = z.infer<typeof ResourcesJson>;

/** The artifact file names a compiled node folder holds beside its digests.json (and the mirror under mgmt/). */
export const AGENT_JSON = 'agent.json';
export const FLOR_JSON = 'flor.json';
export const RESOURCES_JSON = 'resources.json';

/**
 * A file resource's bytes travel as an artifact named after their digest: identical content is one
 * artifact (and one blob at the coordinator) however many paths or nodes hold it. Artifact names are
 * flat file names, hence `file-` and not a folder.
 */
export const fileArtifactName = (sha256: string): string => `file-${sha256}`;
export const FILE_ARTIFACT = /^file-[0-9a-f]{64}$/;
