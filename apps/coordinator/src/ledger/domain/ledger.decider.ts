import { EMPTY_SET_DIGEST, nodeStream, setDigest } from '#bundle';
import { DomainError } from '../../common/index.js';
import type {
  IneligibleNode,
  LedgerEvent,
  NodeReverted,
  NodeSetStamped,
  PublishKind,
  PublishRecorded,
  RecordedRolloutPlan,
  RolloutChanged,
  RolloutEvent,
  RolloutTransition,
  StampedArtifact,
} from './ledger.events.js';
import { checkControl, decideStep, evolve, planWaves, releasable, toRollBack, waveName, type Control, type RolloutState, type WaveFacts } from './rollout.js';

/**
 * The decider's view of one node: its head in the ledger. Absent = never published. A publish reads
 * heads without their artifact lists (it compares set digests); a rollback's target carries its list.
 */
export interface NodeHead {
  readonly version: number;
  readonly setDigest: string;
  readonly retired: boolean;
  readonly artifacts?: readonly StampedArtifact[];
}
export interface NodeSet extends NodeHead {
  readonly artifacts: readonly StampedArtifact[];
}
export type Heads = ReadonlyMap<string, NodeHead>;

export interface ArtifactRef {
  readonly name: string;
  readonly sha256: string;
}

/**
 * Nodes whose enrolment briefing failed, each with the lines it failed, as loaded for the nodes a
 * command would stamp. They get no new content unless the command accepts them by name.
 */
export type Ineligible = ReadonlyMap<string, IneligibleNode['failed_briefing']>;

/** What a command that gives nodes new content knows about ineligible nodes. */
interface IneligibleFacts {
  readonly ineligible: Ineligible;
  /** Nodes the operator accepts although ineligible; naming any other node has no effect. */
  readonly allowIneligible: ReadonlySet<string>;
}

export type LedgerCommand =
  | ({
      readonly type: 'publish_tree';
      readonly message: string;
      readonly prune: boolean;
      readonly nodes: ReadonlyMap<string, readonly ArtifactRef[]>;
      /**
       * The nodes whose set differs from their head (changedNodesOf), when the caller has already
       * worked them out to read only their blobs; worked out here when absent.
       */
      readonly changed?: readonly string[];
      /** Sizes of the blobs the changed nodes reference; a digest missing here is a missing blob. */
      readonly blobSizes: ReadonlyMap<string, number>;
      /** Release the changed nodes in waves: the rollout's id (from outside, as ids are) and its plan. */
      readonly rollout?: { readonly id: string; readonly plan: RecordedRolloutPlan };
      /** The active rollout each changed node belongs to, if any: a publish may not cut across one. */
      readonly inRollout?: ReadonlyMap<string, string>;
      /** The active rollout the publish supersedes, as loaded, when it names one. */
      readonly supersede?: RolloutState;
      /** Operator confirmation window, in seconds (see PublishRecorded.confirm_within). */
      readonly confirmWithin?: number;
    } & IneligibleFacts)
  | ({
      readonly type: 'rollback_node';
      readonly message: string;
      readonly node: string;
      readonly toVersion: number;
      /** The node's set at toVersion as the ledger recorded it, or undefined when there is no such version. */
      readonly target: NodeSet | undefined;
      /**
       * The node reverted `version` to toVersion on its own (commit-confirmed): the rollback makes the
       * ledger say what the node runs, and only while `version` is still the head. Anything published
       * since is newer than what the node reverted, and stands.
       */
      readonly reverted?: { readonly version: number; readonly reason: string };
    } & IneligibleFacts)
  | { readonly type: 'retire_node'; readonly message: string; readonly node: string }
  | {
      /** An operator confirms a publish made with a confirmation window. */
      readonly type: 'confirm_publish';
      readonly publishId: string;
      /** The publish's record as the ledger holds it (undefined: no such publish), and whether it is confirmed already. */
      readonly record: { readonly confirm_within?: number; readonly confirmed_by: string | null } | undefined;
      /** Nodes whose head is still a version this publish stamped: what the confirmation reaches. */
      readonly pending: readonly string[];
    }
  | {
      /** The driver's turn, or an operator's action, on one rollout. */
      readonly type: 'rollout_step';
      readonly state: RolloutState;
      /** `step`: what the gate says (the driver); otherwise an operator's action. */
      readonly action: 'step' | Control;
      readonly message?: string;
      /** What the released waves' nodes reported (see decideStep); read for `step` only. */
      readonly facts: readonly WaveFacts[];
      /** Each released node's set at its version before the rollout, for a rollback (0 → empty). */
      readonly previous: ReadonlyMap<string, readonly StampedArtifact[]>;
      readonly now: Date;
    }
  | {
      /** Released nodes of one rollout that did not confirm within their window: their previous sets back. */
      readonly type: 'rollout_expire';
      readonly state: RolloutState;
      /** Released, and still unconfirmed under the lock. */
      readonly nodes: readonly string[];
      readonly reason: string;
      /** Those nodes' sets at their versions before the rollout (absent → empty). */
      readonly previous: ReadonlyMap<string, readonly StampedArtifact[]>;
    };

/** Ids and time come from outside so decisions are reproducible. */
export interface DecisionContext {
  readonly publishId: string;
}

export interface Decision {
  readonly events: readonly LedgerEvent[];
  readonly changed: readonly { node: string; from: number; to: number }[];
  readonly unchanged: number;
  /** Ineligible nodes stamped with new content because the command accepted them. */
  readonly acceptedIneligible: readonly IneligibleNode[];
  /**
   * Nodes whose fate the decision settles without stamping them: those a confirmation keeps on the
   * version they run, every node of a rollout an operator steers. A scoped token's request is
   * admitted only when these are in its scope, as the nodes it changes are (see changedNodesBy).
   */
  readonly governs?: readonly string[];
}

const NO_CHANGE = (unchanged: number): Decision => ({ events: [], changed: [], unchanged, acceptedIneligible: [] });

/**
 * Nodes of a tree whose set digest differs from their head: the only ones a publish touches. A head
 * read with its artifacts is compared pair by pair, which says whether the digests differ without
 * taking one (the stamp takes the changed node's once); a head read with its digest only, by digest.
 */
export function changedNodesOf(nodes: ReadonlyMap<string, readonly ArtifactRef[]>, heads: Heads): string[] {
  const changed: string[] = [];
  for (const [node, artifacts] of nodes) {
    const head = heads.get(node);
    if (!head || head.retired) changed.push(node);
    else if (head.artifacts !== undefined ? !sameArtifacts(head.artifacts, artifacts) : head.setDigest !== setDigest(artifacts)) changed.push(node);
  }
  return changed;
}

/**
 * Equal name/sha256 pairs mean an equal set digest: most nodes of a large tree skip hashing. Names
 * are unique in a set, so every pair of `b` found in `a`, with equal lengths, is the same set.
 */
export function sameArtifacts(a: readonly ArtifactRef[], b: readonly ArtifactRef[]): boolean {
  if (a.length !== b.length) return false;
  outer: for (const x of b) {
    for (const y of a)
      if (y.name === x.name) {
        if (y.sha256 !== x.sha256) return false;
        continue outer;
      }
    return false;
  }
  return true;
}

/**
 * The decider's state, folded from the events: every node's head (version, set digest, retirement and
 * artifacts), which is what each decision reads (`heads`, loaded by decision-input.ts from the
 * node_heads projection, which holds exactly this). Only a stamp moves a head; the other events
 * leave it as it is. Returns the map it was given, changed.
 */
export function evolveHeads(heads: Map<string, NodeSet>, event: LedgerEvent): Map<string, NodeSet> {
  switch (event.type) {
    case 'node_set_stamped':
      heads.set(event.data.node, {
        version: event.data.version,
        setDigest: event.data.set_digest,
        retired: event.data.retired,
        artifacts: event.data.artifacts,
      });
      return heads;
    case 'publish_recorded':
    case 'publish_confirmed':
    case 'enrolment_token_issued':
    case 'node_enrolled':
    case 'node_witness_key_registered':
    case 'credential_revoked':
    case 'api_token_created':
    case 'api_token_revoked':
    case 'signing_key_rotated':
    case 'signing_key_revoked':
    case 'package_pushed':
    case 'rollout_planned':
    case 'rollout_wave_released':
    case 'rollout_paused':
    case 'rollout_resumed':
    case 'rollout_halted':
    case 'rollout_aborted':
    case 'rollout_completed':
    case 'rollout_superseded':
    case 'rollout_nodes_expired':
      return heads;
    default: {
      const unreachable: never = event;
      throw new TypeError(`unknown ledger event ${JSON.stringify(unreachable)}`);
    }
  }
}

export function decide(command: LedgerCommand, heads: Heads, ctx: DecisionContext): Decision {
  switch (command.type) {
    case 'publish_tree':
      return decidePublish(command, heads, ctx);
    case 'rollback_node':
      return decideRollback(command, heads, ctx);
    case 'retire_node':
      return decideRetire(command, heads, ctx);
    case 'rollout_step':
      return decideRolloutStep(command, heads, ctx);
    case 'rollout_expire':
      return decideExpire(command, heads, ctx);
    case 'confirm_publish':
      return decideConfirm(command);
    default: {
      const unreachable: never = command;
      throw new TypeError(`unknown command ${JSON.stringify(unreachable)}`);
    }
  }
}

function decidePublish(command: Extract<LedgerCommand, { type: 'publish_tree' }>, heads: Heads, ctx: DecisionContext): Decision {
  const changedNodes = command.changed ?? changedNodesOf(command.nodes, heads);
  const accepted = admitIneligible(changedNodes, command);
  const missing = new Set<string>();
  for (const node of changedNodes) {
    for (const a of command.nodes.get(node) ?? []) if (!command.blobSizes.has(a.sha256)) missing.add(a.sha256);
  }
  if (missing.size > 0) {
    const list = [...missing].sort();
    throw new DomainError(
      'missing_blobs',
      `${list.length} blob(s) referenced by the tree were never uploaded: ${list.slice(0, 10).join(', ')}${list.length > 10 ? ', …' : ''}`,
      { missing: list },
    );
  }

  const active = new Map<string, string[]>();
  for (const node of changedNodes) {
    const id = command.inRollout?.get(node);
    if (id !== undefined && id !== command.supersede?.id) active.set(id, [...(active.get(id) ?? []), node]);
  }
  if (active.size > 0) {
    const [id, nodes] = [...active][0];
    throw new DomainError(
      'rollout_in_progress',
      `the publish changes ${nodes.length} node(s) of rollout ${id}, which is still in progress (${nodes.slice(0, 5).join(', ')}${nodes.length > 5 ? ', …' : ''}): wait for it, abort it (retectl rollout abort ${id}), or supersede it (retectl publish --supersede ${id})`,
      { rollout: id, nodes: nodes.sort(compare), rollouts: [...active.keys()] },
    );
  }
  if (command.rollout && command.prune) {
    throw new DomainError('invalid_rollout', 'a publish that prunes cannot also roll out in waves: retire the nodes in a publish of their own');
  }
  const superseded: RolloutEvent[] = command.supersede
    ? [transition(command.supersede, 'rollout_superseded', { superseded_by: ctx.publishId, reason: `superseded by publish ${ctx.publishId}` })]
    : [];

  const stamps: NodeSetStamped[] = [];
  for (const node of [...changedNodes].sort()) {
    const artifacts = [...(command.nodes.get(node) ?? [])]
      .map((a) => ({ name: a.name, sha256: a.sha256, size: command.blobSizes.get(a.sha256) as number }))
      .sort(byName);
    stamps.push(stamp(node, heads.get(node), artifacts, false, ctx));
  }
  if (command.prune) {
    for (const [node, head] of [...heads].sort(([a], [b]) => compare(a, b))) {
      if (!head.retired && !command.nodes.has(node)) stamps.push(stamp(node, head, [], true, ctx));
    }
  }
  const unchanged = command.nodes.size - changedNodes.length;
  if (stamps.length === 0) return superseded.length > 0 ? { ...NO_CHANGE(unchanged), events: superseded } : NO_CHANGE(unchanged);
  if (command.rollout) return planRollout(command.rollout, command.message, stamps, heads, unchanged, ctx, accepted, superseded, command.confirmWithin);
  const decision = withRecord('publish', command.message, stamps, unchanged, ctx, accepted, undefined, command.confirmWithin);
  return { ...decision, events: [...superseded, ...decision.events] };
}

/**
 * A publish in waves: the whole publish is recorded (every changed node's target set, and its wave),
 * and the first wave is released at once. The other nodes' versions do not move until their wave is.
 */
function planRollout(
  rollout: { readonly id: string; readonly plan: RecordedRolloutPlan },
  message: string,
  stamps: readonly NodeSetStamped[],
  heads: Heads,
  unchanged: number,
  ctx: DecisionContext,
  accepted: readonly IneligibleNode[],
  superseded: readonly RolloutEvent[],
  confirmWithin: number | undefined,
): Decision {
  const targets = stamps.map((s) => ({ node: s.data.node, from: s.data.version - 1, artifacts: s.data.artifacts }));
  const waves = planWaves(
    rollout.id,
    targets.map((t) => t.node),
    rollout.plan,
  );
  const planned: RolloutEvent = {
    type: 'rollout_planned',
    stream: `rollout:${rollout.id}`,
    revision: 1,
    data: {
      rollout_id: rollout.id,
      publish_id: ctx.publishId,
      message,
      plan: rollout.plan,
      waves,
      targets,
      ...(confirmWithin !== undefined ? { confirm_within: confirmWithin } : {}),
    },
  };
  // Recorded time matters only for a bake, and the first wave's starts when it is recorded: read back from the ledger then.
  const first = releaseWave(evolve(null, { ...planned, recorded_at: new Date(0).toISOString() }), 0, heads, ctx, false);
  return { ...first, events: [...superseded, planned, ...first.events], unchanged, acceptedIneligible: accepted };
}

/** A wave's release: its nodes still at their planned version stamped with their targets, under a publish record of its own. */
function releaseWave(state: RolloutState, wave: number, heads: Heads, ctx: DecisionContext, promoted: boolean): Decision {
  const { release, skipped } = releasable(state, wave, (n) => heads.get(n)?.version ?? 0);
  const stamps = release.map((t) => stamp(t.node, heads.get(t.node), t.artifacts, false, ctx));
  const record =
    stamps.length > 0
      ? withRecord(
          'publish',
          `${state.message} [rollout ${state.id.slice(0, 8)}: ${waveName(state, wave)} of ${state.waves.length}]`,
          stamps,
          0,
          ctx,
          [],
          undefined,
          state.confirmWithin,
        )
      : null;
  const released: RolloutEvent = {
    type: 'rollout_wave_released',
    stream: `rollout:${state.id}`,
    revision: state.revision + 1,
    data: { rollout_id: state.id, wave, publish_id: record ? ctx.publishId : null, released: record?.changed ?? [], skipped, promoted },
  };
  return { events: [released, ...(record?.events ?? [])], changed: record?.changed ?? [], unchanged: 0, acceptedIneligible: [] };
}

function transition(state: RolloutState, type: RolloutTransition, data: Omit<RolloutChanged['data'], 'rollout_id'>, offset = 1): RolloutChanged {
  return { type, stream: `rollout:${state.id}`, revision: state.revision + offset, data: { rollout_id: state.id, ...data } };
}

/**
 * The driver's turn or an operator's action on a rollout. A step re-decides the gate here, under the
 * ledger lock, from the facts read with it: two drivers that both saw a gate open release the wave
 * once, the second finding it released. A halt (the budget exceeded, or an abort) with `rollback`
 * gives every released node still at the rollout's version its previous set, as a new version.
 */
function decideRolloutStep(command: Extract<LedgerCommand, { type: 'rollout_step' }>, heads: Heads, ctx: DecisionContext): Decision {
  const { state } = command;
  const none = NO_CHANGE(0);
  if (command.action === 'step') {
    const step = decideStep(state, command.facts, command.now);
    switch (step.kind) {
      case 'wait':
        return none;
      case 'release':
        return releaseWave(state, step.wave, heads, ctx, false);
      case 'complete':
        return { ...none, events: [transition(state, 'rollout_completed', {})] };
      case 'halt':
        return halt(state, 'rollout_halted', step.reason, state.plan.on_halt === 'rollback', command.previous, heads, ctx);
      default: {
        const unreachable: never = step;
        throw new TypeError(`unknown step ${JSON.stringify(unreachable)}`);
      }
    }
  }
  checkControl(state, command.action);
  return { ...operatorControl(command, command.action, heads, ctx), governs: [...state.targets.keys()] };
}

/** An operator's pause, resume, promote or abort of a rollout, once checkControl allowed it. */
function operatorControl(command: Extract<LedgerCommand, { type: 'rollout_step' }>, action: Control, heads: Heads, ctx: DecisionContext): Decision {
  const { state } = command;
  const none = NO_CHANGE(0);
  const why = command.message ? `: ${command.message}` : '';
  switch (action) {
    case 'pause':
      return { ...none, events: [transition(state, 'rollout_paused', { ...(command.message ? { reason: command.message } : {}) })] };
    case 'resume':
      return { ...none, events: [transition(state, 'rollout_resumed', { ...(command.message ? { reason: command.message } : {}) })] };
    case 'promote':
      return releaseWave(state, state.released, heads, ctx, true);
    case 'abort':
      return halt(state, 'rollout_aborted', `aborted by an operator${why}`, true, command.previous, heads, ctx);
    default: {
      const unreachable: never = action;
      throw new TypeError(`unknown rollout action ${String(unreachable)}`);
    }
  }
}

function halt(
  state: RolloutState,
  type: 'rollout_halted' | 'rollout_aborted',
  reason: string,
  rollBack: boolean,
  previous: ReadonlyMap<string, readonly StampedArtifact[]>,
  heads: Heads,
  ctx: DecisionContext,
): Decision {
  const back = rollBack ? toRollBack(state, (n) => heads.get(n)?.version ?? 0) : [];
  const stamps = back.map(({ node, from }) => stamp(node, heads.get(node), previous.get(node) ?? [], false, ctx, from > 0 ? from : undefined));
  const record =
    stamps.length > 0
      ? withRecord(
          'rollback',
          `rollout ${state.id.slice(0, 8)} ${type === 'rollout_aborted' ? 'aborted' : 'halted'}, released nodes back to their previous sets: ${reason}`.slice(
            0,
            4096,
          ),
          stamps,
          0,
          ctx,
        )
      : null;
  const event = transition(state, type, { reason, ...(record ? { rollback_publish_id: ctx.publishId } : {}) });
  return { events: [event, ...(record?.events ?? [])], changed: record?.changed ?? [], unchanged: 0, acceptedIneligible: [] };
}

/**
 * Released nodes past their confirmation window, unconfirmed: each is given the set it had before the
 * rollout as a new version, as its agent has gone back to it by itself (or never took the change).
 * Only nodes still at the version the rollout gave them: one changed since keeps what it has. The
 * rollout's state does not change; its stream records which nodes expired, and why.
 */
function decideExpire(command: Extract<LedgerCommand, { type: 'rollout_expire' }>, heads: Heads, ctx: DecisionContext): Decision {
  const { state } = command;
  const nodes = new Set(command.nodes);
  const back = toRollBack(state, (n) => (nodes.has(n) ? (heads.get(n)?.version ?? 0) : -1));
  if (back.length === 0) return NO_CHANGE(0);
  const stamps = back.map(({ node, from }) => stamp(node, heads.get(node), command.previous.get(node) ?? [], false, ctx, from > 0 ? from : undefined));
  const names = back.map((b) => b.node);
  const message = `rollout ${state.id.slice(0, 8)} unconfirmed, released nodes back to their previous sets: ${command.reason} (${names.slice(0, 5).join(', ')}${names.length > 5 ? `, and ${names.length - 5} more` : ''})`;
  const record = withRecord('rollback', message.slice(0, 4096), stamps, 0, ctx);
  const expired: RolloutEvent = {
    type: 'rollout_nodes_expired',
    stream: `rollout:${state.id}`,
    revision: state.revision + 1,
    data: { rollout_id: state.id, publish_id: ctx.publishId, nodes: record.changed, reason: command.reason },
  };
  return { ...record, events: [expired, ...record.events] };
}

function decideRollback(command: Extract<LedgerCommand, { type: 'rollback_node' }>, heads: Heads, ctx: DecisionContext): Decision {
  const head = heads.get(command.node);
  if (!head) throw new DomainError('unknown_node', `node ${command.node} has never been published`, { node: command.node });
  if (command.reverted && (head.version !== command.reverted.version || head.retired)) return NO_CHANGE(1);
  if (!command.target) {
    throw new DomainError('unknown_version', `node ${command.node} has no version ${command.toVersion} (head is ${head.version})`, {
      node: command.node,
      version: command.toVersion,
    });
  }
  if (command.toVersion >= head.version) {
    throw new DomainError('invalid_rollback_target', `version ${command.toVersion} is not older than the head ${head.version} of ${command.node}`, {
      node: command.node,
    });
  }
  if (command.target.retired) {
    throw new DomainError('invalid_rollback_target', `version ${command.toVersion} of ${command.node} is a retirement; retire the node instead`, {
      node: command.node,
    });
  }
  if (!head.retired && head.setDigest === command.target.setDigest) return NO_CHANGE(1);
  const accepted = admitIneligible([command.node], command);
  const event = stamp(command.node, head, command.target.artifacts, false, ctx, command.toVersion);
  const revert = command.reverted
    ? { node: command.node, version: command.reverted.version, to: command.toVersion, reason: command.reverted.reason }
    : undefined;
  return withRecord('rollback', command.message, [event], 0, ctx, accepted, revert);
}

function decideRetire(command: Extract<LedgerCommand, { type: 'retire_node' }>, heads: Heads, ctx: DecisionContext): Decision {
  const head = heads.get(command.node);
  if (!head) throw new DomainError('unknown_node', `node ${command.node} has never been published`, { node: command.node });
  if (head.retired) throw new DomainError('node_retired', `node ${command.node} is already retired at version ${head.version}`, { node: command.node });
  return withRecord('retire', command.message, [stamp(command.node, head, [], true, ctx)], 0, ctx);
}

/** How many refused nodes a refusal's message names; the problem body lists them all. */
const NAMED_IN_MESSAGE = 5;

/**
 * The rule for ineligible nodes: a command that would give one new content is refused as a whole,
 * naming each node and its failed lines, unless it accepts every such node by name. Retirement
 * gives no content and is never refused. Returns the ineligible nodes accepted, for the record.
 */
function admitIneligible(stamped: readonly string[], facts: IneligibleFacts): IneligibleNode[] {
  const flagged = stamped
    .filter((node) => facts.ineligible.has(node))
    .sort(compare)
    .map((node): IneligibleNode => ({ node, failed_briefing: facts.ineligible.get(node) ?? [] }));
  const refused = flagged.filter((n) => !facts.allowIneligible.has(n.node));
  if (refused.length === 0) return flagged;
  const named = refused
    .slice(0, NAMED_IN_MESSAGE)
    .map((n) => `${n.node} (${n.failed_briefing.map((l) => `${l.check}: ${l.detail}`).join('; ') || 'briefing failed'})`);
  const more = refused.length > NAMED_IN_MESSAGE ? `, and ${refused.length - NAMED_IN_MESSAGE} more` : '';
  const names = JSON.stringify(refused.map((n) => n.node));
  throw new DomainError(
    'ineligible_nodes',
    `${refused.length === 1 ? 'a node' : `${refused.length} nodes`} would get new content although ineligible (a failed enrolment briefing line): ${named.join(', ')}${more}. Enrol ${refused.length === 1 ? 'it' : 'them'} again with a briefing that passes, or accept ${refused.length === 1 ? 'it' : 'them'} with allow_ineligible: ${names}`,
    { nodes: refused },
  );
}

function stamp(
  node: string,
  head: NodeHead | undefined,
  artifacts: readonly StampedArtifact[],
  retired: boolean,
  ctx: DecisionContext,
  restoredFrom?: number,
): NodeSetStamped {
  // Versions continue across retire and re-add: a name's stream never restarts.
  const version = (head?.version ?? 0) + 1;
  return {
    type: 'node_set_stamped',
    stream: nodeStream(node),
    revision: version,
    // In canonical order (artifacts' too: name, sha256, size), which the ledger's append writes fastest.
    data: {
      artifacts: retired ? [] : artifacts,
      node,
      publish_id: ctx.publishId,
      ...(restoredFrom === undefined ? {} : { restored_from: restoredFrom }),
      retired,
      set_digest: retired ? EMPTY_SET_DIGEST : setDigest(artifacts),
      version,
    },
  };
}

function withRecord(
  kind: PublishKind,
  message: string,
  stamps: NodeSetStamped[],
  unchanged: number,
  ctx: DecisionContext,
  accepted: readonly IneligibleNode[] = [],
  reverted?: NodeReverted,
  confirmWithin?: number,
): Decision {
  const changed = stamps.map((s) => ({ node: s.data.node, from: s.data.version - 1, to: s.data.version }));
  const record: PublishRecorded = {
    type: 'publish_recorded',
    stream: `publish:${ctx.publishId}`,
    revision: 1,
    // The acceptance is part of the hash-chained record: who (the event's actor) accepted which nodes, failing what.
    data: {
      publish_id: ctx.publishId,
      kind,
      message,
      changed,
      unchanged,
      ...(accepted.length > 0 ? { accepted_ineligible: accepted } : {}),
      ...(reverted ? { reverted } : {}),
      ...(confirmWithin !== undefined ? { confirm_within: confirmWithin } : {}),
    },
  };
  return { events: [...stamps, record], changed, unchanged, acceptedIneligible: accepted };
}

/**
 * An operator's confirmation of a publish made with a window: recorded once, with who. Refused for a
 * publish without a window, one confirmed already, or one none of whose nodes still runs what it
 * stamped (a later publish or a revert replaced them all: there is nothing left to confirm).
 */
function decideConfirm(command: Extract<LedgerCommand, { type: 'confirm_publish' }>): Decision {
  const { record, publishId } = command;
  if (!record) throw new DomainError('unknown_publish', `no publish ${publishId}`, { publish_id: publishId });
  if (record.confirm_within === undefined)
    throw new DomainError('not_confirmable', `publish ${publishId} was made without --confirm-within: its nodes need no confirmation`, {
      publish_id: publishId,
    });
  if (record.confirmed_by !== null)
    throw new DomainError('already_confirmed', `publish ${publishId} was confirmed already, by ${record.confirmed_by}`, {
      publish_id: publishId,
      confirmed_by: record.confirmed_by,
    });
  if (command.pending.length === 0)
    throw new DomainError('not_confirmable', `no node runs publish ${publishId} any more (published over or reverted): nothing to confirm`, {
      publish_id: publishId,
    });
  return {
    events: [{ type: 'publish_confirmed', stream: `publish:${publishId}`, revision: 2, data: { publish_id: publishId } }],
    changed: [],
    unchanged: command.pending.length,
    acceptedIneligible: [],
    governs: command.pending,
  };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byName = (a: { name: string }, b: { name: string }): number => compare(a.name, b.name);
