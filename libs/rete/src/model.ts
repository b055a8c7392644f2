import type { HealthCheck, PackageManager, ReteFile, RolloutPlanInput } from '#contracts/files';
import type { Place } from './diagnostics.js';

/** The merged, checked rete: what compile turns into artifacts. Durations are whole seconds. */
export interface Rete {
  /** safety_net is the operators' note of their out-of-band way in: checked, never compiled. */
  readonly mesh: { readonly name: string; readonly coordinator: string; readonly safety_net?: string };
  readonly nodes: readonly ReteNodeModel[];
  readonly groups: ReadonlyMap<string, readonly string[]>;
  readonly acl: readonly AclRuleModel[];
  /** The rete's `rollout:` block: the plan a publish uses unless told otherwise. Compiled into no node's set. */
  readonly rollout?: RolloutModel;
  /** The `defaults:` block as written, when the rete has one: already merged into each node's sync. */
  readonly defaults?: NonNullable<ReteFile['defaults']>;
}

export interface RolloutModel {
  /** The fields the block sets, its canary resolved to node names; the plan's defaults fill the rest. */
  readonly plan: RolloutPlanInput;
  readonly place: Place;
}

export interface SyncSeconds {
  readonly poll_interval: number;
  readonly splay: number;
  /** The agent watches its bundle between polls. */
  readonly watch: boolean;
  /** Commit-confirmed window; absent when the node has none. */
  readonly confirm_within?: number;
  /** As agent.json carries them: defaults filled in, durations in seconds. */
  readonly health_checks?: readonly HealthCheck[];
}

export interface ReteNodeModel {
  readonly name: string;
  readonly kind: 'server' | 'device';
  readonly listen: string;
  readonly tags: readonly string[];
  readonly sync: SyncSeconds;
  readonly services: readonly { readonly name: string; readonly port: number; readonly protocol: 'tcp' | 'udp' }[];
  readonly resources: NodeResources;
  readonly place: Place;
}

/**
 * A node's host resources in the order to apply them: its own first, then those of the top-level
 * entries that select it, in file-path order and, within a file, in the order written. One
 * declaration selected by many nodes is one shared object.
 */
export interface NodeResources {
  readonly files: readonly FileResourceModel[];
  readonly packages: readonly PackageResourceModel[];
}

export interface FileResourceModel {
  readonly path: string;
  /** Four octal digits, e.g. "0644". */
  readonly mode: string;
  readonly owner: string;
  readonly group: string;
  readonly content: Uint8Array;
  /** Of `content`: the name of the artifact that carries it. */
  readonly sha256: string;
  readonly place: Place;
}

export interface PackageResourceModel {
  readonly manager: PackageManager;
  readonly name: string;
  readonly version: string;
  readonly place: Place;
}

export type AclSource = { readonly kind: 'node' | 'group' | 'tag'; readonly name: string };
export interface AclRuleModel {
  readonly from: readonly AclSource[];
  readonly to: readonly { readonly node: string; readonly service: string }[];
}
