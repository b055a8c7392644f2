import type { ResourcesJson } from '#contracts/files';
import { setDigest } from '#bundle';
import { cmp } from './diagnostics.js';
import { diffResources, type ResourceChange } from './resource-changes.js';

/** A node's artifacts by name → sha256, locally or at the coordinator's head. */
export type ArtifactDigests = ReadonlyMap<string, string>;

/** A row of GET /v1/nodes; version and digest are null for a node known only by its enrolment. */
export interface HeadSummary {
  readonly node: string;
  readonly version: number | null;
  readonly set_digest: string | null;
  readonly retired: boolean;
  /** A failed enrolment briefing line: the coordinator refuses to give the node new content unless accepted. */
  readonly ineligible?: boolean;
  readonly failed_briefing?: readonly BriefingFailure[];
}

export interface BriefingFailure {
  readonly check: string;
  readonly detail: string;
}

/** A node the plan would give new content although it is ineligible: the publish is refused unless it is accepted. */
export interface IneligibleEntry {
  readonly node: string;
  readonly failed_briefing: readonly BriefingFailure[];
}

interface PublishedHead extends HeadSummary {
  readonly version: number;
  readonly set_digest: string;
}
const published = (heads: readonly HeadSummary[]): PublishedHead[] => heads.filter((h): h is PublishedHead => h.version !== null && h.set_digest !== null);

/** `resources`: how the node's host resources would change, when they would. */
export type PlanEntry =
  | {
      readonly node: string;
      readonly action: 'new';
      readonly artifacts: readonly string[];
      readonly readded: boolean;
      readonly resources?: readonly ResourceChange[];
    }
  | {
      readonly node: string;
      readonly action: 'changed';
      readonly version: number;
      readonly artifacts: readonly string[];
      readonly resources?: readonly ResourceChange[];
    }
  | { readonly node: string; readonly action: 'unchanged'; readonly version: number }
  | { readonly node: string; readonly action: 'retired'; readonly version: number }
  | { readonly node: string; readonly action: 'absent'; readonly version: number };

export interface Plan {
  readonly entries: readonly PlanEntry[];
  /** True when a publish (with the same prune flag) would stamp at least one version. */
  readonly changes: boolean;
  /** New or changed nodes that are ineligible: the publish fails unless it accepts each of them. */
  readonly ineligible: readonly IneligibleEntry[];
}

/** The parsed resources.json of each node that has one: in the compiled tree, and at the heads being compared. */
export interface ResourceSides {
  readonly local: ReadonlyMap<string, ResourcesJson>;
  readonly head: ReadonlyMap<string, ResourcesJson>;
}

export const localSetDigest = (artifacts: ArtifactDigests): string => setDigest([...artifacts].map(([name, sha256]) => ({ name, sha256 })));

/** Nodes whose head digest differs from the local set: only these need their head artifacts fetched. */
export function nodesToInspect(local: ReadonlyMap<string, ArtifactDigests>, heads: readonly HeadSummary[]): string[] {
  const byNode = new Map(published(heads).map((h) => [h.node, h]));
  return [...local]
    .filter(([node, artifacts]) => {
      const head = byNode.get(node);
      return head !== undefined && !head.retired && head.set_digest !== localSetDigest(artifacts);
    })
    .map(([node]) => node)
    .sort(cmp);
}

/**
 * What a publish would do, mirroring the coordinator's rule that only what changed moves (docs/architecture.md): a node is
 * stamped only when its set digest differs from its head; a retired head is re-added. With prune,
 * live heads missing from the tree are retired; without it they are listed as absent and kept. With
 * both sides' resources.json, new and changed nodes also say how their host resources change.
 */
export function planPublish(
  local: ReadonlyMap<string, ArtifactDigests>,
  heads: readonly HeadSummary[],
  headArtifacts: ReadonlyMap<string, ArtifactDigests>,
  prune: boolean,
  resources: ResourceSides = { local: new Map(), head: new Map() },
): Plan {
  const withResources = (node: string, before: ResourcesJson | undefined) => {
    const changes = diffResources(before, resources.local.get(node));
    return changes.length > 0 ? { resources: changes } : {};
  };
  const live = published(heads);
  const byNode = new Map(live.map((h) => [h.node, h]));
  const entries: PlanEntry[] = [];
  for (const node of [...local.keys()].sort(cmp)) {
    const artifacts = local.get(node) as ArtifactDigests;
    const head = byNode.get(node);
    if (!head || head.retired) {
      // A retired head holds nothing: a re-added node gets every resource anew.
      entries.push({ node, action: 'new', artifacts: [...artifacts.keys()].sort(cmp), readded: head !== undefined, ...withResources(node, undefined) });
    } else if (head.set_digest === localSetDigest(artifacts)) {
      entries.push({ node, action: 'unchanged', version: head.version });
    } else {
      const before = headArtifacts.get(node) ?? new Map<string, string>();
      const names = [...new Set([...before.keys(), ...artifacts.keys()])].sort(cmp);
      entries.push({
        node,
        action: 'changed',
        version: head.version,
        artifacts: names.filter((a) => before.get(a) !== artifacts.get(a)),
        ...withResources(node, resources.head.get(node)),
      });
    }
  }
  for (const head of [...live].sort((a, b) => cmp(a.node, b.node))) {
    if (head.retired || local.has(head.node)) continue;
    entries.push({ node: head.node, action: prune ? 'retired' : 'absent', version: head.version });
  }
  entries.sort((a, b) => cmp(a.node, b.node));
  // Every known node counts, published or not: one enrolled with a failed briefing is refused its first set too.
  const flagged = new Map(heads.filter((h) => h.ineligible).map((h) => [h.node, h.failed_briefing ?? []]));
  const ineligible = entries
    .filter((e) => (e.action === 'new' || e.action === 'changed') && flagged.has(e.node))
    .map((e) => ({ node: e.node, failed_briefing: flagged.get(e.node) ?? [] }));
  return { entries, changes: entries.some((e) => e.action === 'new' || e.action === 'changed' || e.action === 'retired'), ineligible };
}
