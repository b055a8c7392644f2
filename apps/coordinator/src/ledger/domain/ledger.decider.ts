import { EMPTY_SET_DIGEST, setDigest } from '#bundle';
import { DomainError } from '../../common/domain-error.js';
import type { IneligibleNode, LedgerEvent, NodeReverted, NodeSetStamped, PublishKind, PublishRecorded, StampedArtifact } from './ledger.events.js';

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
  | { readonly type: 'retire_node'; readonly message: string; readonly node: string };

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
}

const NO_CHANGE = (unchanged: number): Decision => ({ events: [], changed: [], unchanged, acceptedIneligible: [] });

/** Nodes of a tree whose set digest differs from their head: the only ones a publish touches. */
export function changedNodesOf(nodes: ReadonlyMap<string, readonly ArtifactRef[]>, heads: Heads): string[] {
  const changed: string[] = [];
  for (const [node, artifacts] of nodes) {
    const head = heads.get(node);
    if (!head || head.retired) changed.push(node);
    else if (head.artifacts !== undefined && sameArtifacts(head.artifacts, artifacts)) continue;
    else if (head.setDigest !== setDigest(artifacts)) changed.push(node);
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
    for (const y of a) if (y.name === x.name) {
      if (y.sha256 !== x.sha256) return false;
      continue outer;
    }
    return false;
  }
  return true;
}

export function decide(command: LedgerCommand, heads: Heads, ctx: DecisionContext): Decision {
  switch (command.type) {
    case 'publish_tree':
      return decidePublish(command, heads, ctx);
    case 'rollback_node':
      return decideRollback(command, heads, ctx);
    case 'retire_node':
      return decideRetire(command, heads, ctx);
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
    throw new DomainError('missing_blobs', `${list.length} blob(s) referenced by the tree were never uploaded: ${list.slice(0, 10).join(', ')}${list.length > 10 ? ', …' : ''}`, { missing: list });
  }

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
  if (stamps.length === 0) return NO_CHANGE(unchanged);
  return withRecord('publish', command.message, stamps, unchanged, ctx, accepted);
}

function decideRollback(command: Extract<LedgerCommand, { type: 'rollback_node' }>, heads: Heads, ctx: DecisionContext): Decision {
  const head = heads.get(command.node);
  if (!head) throw new DomainError('unknown_node', `node ${command.node} has never been published`, { node: command.node });
  if (command.reverted && (head.version !== command.reverted.version || head.retired)) return NO_CHANGE(1);
  if (!command.target) {
    throw new DomainError('unknown_version', `node ${command.node} has no version ${command.toVersion} (head is ${head.version})`, { node: command.node, version: command.toVersion });
  }
  if (command.toVersion >= head.version) {
    throw new DomainError('invalid_rollback_target', `version ${command.toVersion} is not older than the head ${head.version} of ${command.node}`, { node: command.node });
  }
  if (command.target.retired) {
    throw new DomainError('invalid_rollback_target', `version ${command.toVersion} of ${command.node} is a retirement; retire the node instead`, { node: command.node });
  }
  if (!head.retired && head.setDigest === command.target.setDigest) return NO_CHANGE(1);
  const accepted = admitIneligible([command.node], command);
  const event = stamp(command.node, head, command.target.artifacts, false, ctx, command.toVersion);
  const revert = command.reverted ? { node: command.node, version: command.reverted.version, to: command.toVersion, reason: command.reverted.reason } : undefined;
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
  const named = refused.slice(0, NAMED_IN_MESSAGE).map((n) => `${n.node} (${n.failed_briefing.map((l) => `${l.check}: ${l.detail}`).join('; ') || 'briefing failed'})`);
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
    stream: `node:${node}`,
    revision: version,
    data: {
      node,
      version,
      set_digest: retired ? EMPTY_SET_DIGEST : setDigest(artifacts),
      retired,
      artifacts: retired ? [] : artifacts,
      publish_id: ctx.publishId,
      ...(restoredFrom === undefined ? {} : { restored_from: restoredFrom }),
    },
  };
}

function withRecord(kind: PublishKind, message: string, stamps: NodeSetStamped[], unchanged: number, ctx: DecisionContext, accepted: readonly IneligibleNode[] = [], reverted?: NodeReverted): Decision {
  const changed = stamps.map((s) => ({ node: s.data.node, from: s.data.version - 1, to: s.data.version }));
  const record: PublishRecorded = {
    type: 'publish_recorded',
    stream: `publish:${ctx.publishId}`,
    revision: 1,
    // The acceptance is part of the hash-chained record: who (the event's actor) accepted which nodes, failing what.
    data: { publish_id: ctx.publishId, kind, message, changed, unchanged, ...(accepted.length > 0 ? { accepted_ineligible: accepted } : {}), ...(reverted ? { reverted } : {}) },
  };
  return { events: [...stamps, record], changed, unchanged, acceptedIneligible: accepted };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byName = (a: { name: string }, b: { name: string }): number => compare(a.name, b.name);
