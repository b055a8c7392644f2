/** Ledger event types. Each is appended to one stream; node streams' revisions are node versions. */
export interface StampedArtifact {
  readonly name: string;
  readonly sha256: string;
  readonly size: number;
}

/** A node whose enrolment briefing failed, and the lines it failed. */
export interface IneligibleNode {
  readonly node: string;
  readonly failed_briefing: readonly { readonly check: string; readonly detail: string }[];
}

export type PublishKind = 'publish' | 'rollback' | 'retire';

export interface NodeSetStamped {
  readonly type: 'node_set_stamped';
  readonly stream: `node:${string}`;
  readonly revision: number;
  readonly data: {
    readonly node: string;
    readonly version: number;
    readonly set_digest: string;
    readonly retired: boolean;
    readonly artifacts: readonly StampedArtifact[];
    readonly publish_id: string;
    readonly restored_from?: number;
  };
}

/** A node that went back on its own from a version it could not confirm (commit-confirmed), and why. */
export interface NodeReverted {
  readonly node: string;
  readonly version: number;
  readonly to: number;
  readonly reason: string;
}

export interface PublishRecorded {
  readonly type: 'publish_recorded';
  readonly stream: `publish:${string}`;
  readonly revision: 1;
  readonly data: {
    readonly publish_id: string;
    readonly kind: PublishKind;
    readonly message: string;
    readonly changed: readonly { node: string; from: number; to: number }[];
    readonly unchanged: number;
    /**
     * Ineligible nodes this record gave new content because its actor accepted them, with the lines
     * they had failed then. Absent when there were none, so earlier records keep their exact bytes.
     */
    readonly accepted_ineligible?: readonly IneligibleNode[];
    /** A rollback that records a node's own revert; its actor is the node. Absent otherwise. */
    readonly reverted?: NodeReverted;
    /** Operator confirmation: the changed nodes revert unless the publish is confirmed this many seconds after activation. */
    readonly confirm_within?: number;
  };
}

/** An operator confirmed a publish made with a confirmation window; the event's actor is who. */
export interface PublishConfirmed {
  readonly type: 'publish_confirmed';
  readonly stream: `publish:${string}`;
  readonly revision: 2;
  readonly data: { readonly publish_id: string };
}

export interface IdentityRecorded {
  readonly type:
    | 'enrolment_token_issued'
    | 'node_enrolled'
    | 'node_witness_key_registered'
    | 'credential_revoked'
    | 'api_token_created'
    | 'api_token_revoked'
    | 'signing_key_rotated'
    | 'signing_key_revoked';
  readonly stream: `identity:${string}`;
  readonly revision: number;
  readonly data: Record<string, unknown>;
}

/**
 * A package pushed to the mesh's apt repository: who pushed it is the event's actor. One stream per
 * package name, one event per version and architecture, never replaced: a second push of the same
 * version with other bytes is refused before it gets here.
 */
export interface PackagePushed {
  readonly type: 'package_pushed';
  readonly stream: `package:${string}`;
  readonly revision: number;
  readonly data: {
    readonly name: string;
    readonly version: string;
    readonly architecture: string;
    readonly sha256: string;
    readonly size: number;
    /** The control paragraph the repository's Packages index carries for it. */
    readonly control: string;
  };
}

/** A rollout plan as recorded: every field filled in (the defaults applied). */
export interface RecordedRolloutPlan {
  readonly canary: readonly string[];
  readonly waves: readonly number[];
  readonly bake_seconds: number;
  readonly failure_budget: { readonly count: number } | { readonly share: number };
  readonly confirm_share: number;
  readonly on_halt: 'rollback' | 'hold';
}

/** A node a rollout changes: the version it had when the rollout was planned, and the set it is to get. */
export interface RolloutTarget {
  readonly node: string;
  readonly from: number;
  readonly artifacts: readonly StampedArtifact[];
}

/**
 * A publish with a rollout plan, recorded whole: every changed node's target set and the waves they
 * go out in. Only the release events that follow stamp versions; the nodes of later waves keep theirs.
 */
export interface RolloutPlanned {
  readonly type: 'rollout_planned';
  readonly stream: `rollout:${string}`;
  readonly revision: 1;
  readonly data: {
    readonly rollout_id: string;
    readonly publish_id: string;
    readonly message: string;
    readonly plan: RecordedRolloutPlan;
    /** Node names per wave, in release order; the canary's first when the plan named one. */
    readonly waves: readonly (readonly string[])[];
    readonly targets: readonly RolloutTarget[];
    /** Operator confirmation for every wave's release (see PublishRecorded). */
    readonly confirm_within?: number;
  };
}

/**
 * One wave released: its nodes stamped by the publish record that follows (publish_id). `skipped`
 * nodes had been changed by something else since the plan and keep what they have.
 */
export interface RolloutWaveReleased {
  readonly type: 'rollout_wave_released';
  readonly stream: `rollout:${string}`;
  readonly revision: number;
  readonly data: {
    readonly rollout_id: string;
    readonly wave: number;
    readonly publish_id: string | null;
    readonly released: readonly { readonly node: string; readonly from: number; readonly to: number }[];
    readonly skipped: readonly string[];
    /** Released by an operator before its gate opened (`retectl rollout promote`). */
    readonly promoted: boolean;
  };
}

export type RolloutTransition = 'rollout_paused' | 'rollout_resumed' | 'rollout_halted' | 'rollout_aborted' | 'rollout_completed' | 'rollout_superseded';

/** A rollout changing state; who did it is the event's actor (the driver's for a halt or completion it decided). */
export interface RolloutChanged {
  readonly type: RolloutTransition;
  readonly stream: `rollout:${string}`;
  readonly revision: number;
  readonly data: {
    readonly rollout_id: string;
    readonly reason?: string;
    /** A halt or abort that gave the released nodes their previous content back: that rollback's publish id. */
    readonly rollback_publish_id?: string;
    /** The publish that superseded the rollout. */
    readonly superseded_by?: string;
  };
}

/**
 * Released nodes that did not confirm their version within its confirmation window: each has gone
 * back to its previous set by itself (commit-confirmed), or never took the change, so the ledger gives
 * them that set back as a new version (the rollback record `publish_id`), and the node and the ledger
 * agree again. `nodes` are as the rollback stamped them: `from` the rollout's version, `to` the new one.
 */
export interface RolloutNodesExpired {
  readonly type: 'rollout_nodes_expired';
  readonly stream: `rollout:${string}`;
  readonly revision: number;
  readonly data: {
    readonly rollout_id: string;
    readonly publish_id: string;
    readonly nodes: readonly { readonly node: string; readonly from: number; readonly to: number }[];
    readonly reason: string;
  };
}

export type RolloutEvent = RolloutPlanned | RolloutWaveReleased | RolloutChanged | RolloutNodesExpired;

export type LedgerEvent = NodeSetStamped | PublishRecorded | PublishConfirmed | IdentityRecorded | PackagePushed | RolloutEvent;
