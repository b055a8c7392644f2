import type { Transaction } from 'kysely';
import type { Database } from '../../db/index.js';
import { changedNodesOf, type ArtifactRef, type Heads, type LedgerCommand } from '../domain/ledger.decider.js';
import { loadHeadDigests, loadHeads } from './heads.js';
import { loadVersion } from './versions.js';
import type { RecordedRolloutPlan } from '../domain/ledger.events.js';
import type { Control } from '../domain/rollout.js';
import { decideStep } from '../domain/rollout.js';
import { activeRolloutsOf, loadPrevious, loadRollout, loadWaveFacts, resolveRolloutId, stillUnconfirmed } from './rollouts.js';
import { loadConfirmable } from './confirm.js';
import type { IneligibleNodes, LedgerBlobs } from '../ledger-ports.js';

/** What a decision reads of tables the ledger does not keep. */
export interface DecisionSources {
  readonly blobs: LedgerBlobs;
  readonly ineligible: IneligibleNodes;
}

/** What an operator asks of the ledger, before the state the decision needs is read. */
export type LedgerRequest =
  | {
      readonly type: 'publish_tree';
      readonly message: string;
      readonly prune: boolean;
      readonly nodes: ReadonlyMap<string, readonly ArtifactRef[]>;
      readonly allowIneligible: readonly string[];
      /** Release in waves; the rollout's id is the publish's. */
      readonly rollout?: RecordedRolloutPlan;
      /** The id (or its prefix) of an active rollout this publish supersedes. */
      readonly supersedeRollout?: string;
      /** Operator confirmation window, in seconds. */
      readonly confirmWithin?: number;
    }
  | { readonly type: 'confirm_publish'; readonly publishId: string }
  | {
      readonly type: 'rollback_node';
      readonly node: string;
      readonly toVersion: number;
      readonly message: string;
      readonly allowIneligible: readonly string[];
      /** A node's revert: the version it reverted from, and why (see the decider's rollback_node). */
      readonly reverted?: { readonly version: number; readonly reason: string };
    }
  | { readonly type: 'retire_node'; readonly node: string; readonly message: string }
  | {
      /** The driver's turn (`step`) or an operator's action on a rollout, by id or a unique prefix of it. */
      readonly type: 'rollout_step';
      readonly rollout: string;
      readonly action: 'step' | Control;
      readonly message?: string;
      readonly now: Date;
    }
  | {
      /**
       * The driver found released nodes past their confirmation window unconfirmed (expiredNodes):
       * give them their previous sets back. Checked again under the lock, so a node that confirmed
       * or was changed meanwhile is left alone.
       */
      readonly type: 'rollout_expire';
      readonly rollout: string;
      readonly nodes: readonly string[];
      readonly reason: string;
    };

/**
 * Reads what the decider needs for one request, inside the appending transaction and under the
 * ledger lock, so the heads and ineligibility flags are those of the moment the decision is recorded.
 */
export interface DecisionInput {
  readonly command: LedgerCommand;
  readonly heads: Heads;
  /** Every node's head, when they were known or read (a large or pruning publish), else null. */
  readonly allHeads: Heads | null;
}

/**
 * `known` is every node's head as of the ledger head, from memory, or null; `wantsAll` says whether a
 * publish should read them all when they are not known.
 */
export async function loadDecisionInput(
  trx: Transaction<Database>,
  request: LedgerRequest,
  known: Heads | null,
  wantsAll: (treeNodes: number, prune: boolean) => boolean,
  publishId: string,
  sources: DecisionSources,
): Promise<DecisionInput> {
  const input = await load(trx, request, known, wantsAll, publishId, sources);
  return { ...input, allHeads: known ?? input.allHeads };
}

async function load(
  trx: Transaction<Database>,
  request: LedgerRequest,
  known: Heads | null,
  wantsAll: (treeNodes: number, prune: boolean) => boolean,
  publishId: string,
  sources: DecisionSources,
): Promise<DecisionInput> {
  switch (request.type) {
    case 'publish_tree': {
      // Every head with its artifact list (kept in memory after), or the tree's own heads with their set
      // digests only: a few thousand nodes per statement either way.
      const all = !known && wantsAll(request.nodes.size, request.prune);
      const heads = known ?? (all ? await loadHeads(trx, 'all') : await loadHeadDigests(trx, [...request.nodes.keys()]));
      // Only changed nodes need their blobs: an unchanged node of a 10,000-node tree costs a comparison of
      // its artifact list with its head's (or a digest, when the head came without one), not a read.
      const changed = changedNodesOf(request.nodes, heads);
      const sizes = await blobSizesFor(trx, changed, request.nodes, heads, sources.blobs);
      const { rollout, supersedeRollout, ...plain } = request;
      const supersede = supersedeRollout === undefined ? undefined : await loadRollout(trx, await resolveRolloutId(trx, supersedeRollout));
      const command: LedgerCommand = {
        ...plain,
        ...(rollout ? { rollout: { id: publishId, plan: rollout } } : {}),
        ...(supersede ? { supersede } : {}),
        inRollout: await activeRolloutsOf(trx, changed),
        changed,
        blobSizes: sizes,
        ineligible: await sources.ineligible.load(trx, changed),
        allowIneligible: new Set(request.allowIneligible),
      };
      return { heads, command, allHeads: all ? heads : null };
    }
    case 'rollback_node':
      return {
        allHeads: null,
        heads: await loadHeads(trx, [request.node]),
        command: {
          ...request,
          target: await loadVersion(trx, request.node, request.toVersion),
          ineligible: await sources.ineligible.load(trx, [request.node]),
          allowIneligible: new Set(request.allowIneligible),
        },
      };
    case 'retire_node':
      return { heads: await loadHeads(trx, [request.node]), command: request, allHeads: null };
    case 'confirm_publish':
      return {
        heads: new Map(),
        allHeads: null,
        command: { type: 'confirm_publish', publishId: request.publishId, ...(await loadConfirmable(trx, request.publishId)) },
      };
    case 'rollout_step': {
      const state = await loadRollout(trx, await resolveRolloutId(trx, request.rollout));
      const facts = await loadWaveFacts(trx, state.id);
      const next = state.waves[state.released] ?? [];
      const heads = await loadHeads(trx, [...next, ...state.stamped.keys()]);
      // Previous sets are read only when the answer may be a rollback: an abort, or a gate that halts.
      const halts = request.action === 'abort' || (request.action === 'step' && decideStep(state, facts, request.now).kind === 'halt');
      const previous = halts ? await loadPrevious(trx, state) : new Map();
      return {
        heads,
        allHeads: null,
        command: {
          type: 'rollout_step',
          state,
          action: request.action,
          facts,
          previous,
          now: request.now,
          ...(request.message ? { message: request.message } : {}),
        },
      };
    }
    case 'rollout_expire': {
      const state = await loadRollout(trx, request.rollout);
      const nodes = await stillUnconfirmed(trx, state, request.nodes);
      return {
        heads: await loadHeads(trx, nodes),
        allHeads: null,
        command: { type: 'rollout_expire', state, nodes, reason: request.reason, previous: await loadPrevious(trx, state, nodes) },
      };
    }
    default: {
      const unreachable: never = request;
      throw new TypeError(`unknown ledger request ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * The size of each blob the changed nodes name. An artifact a node's head already has (the same
 * sha256; an all-changed publish of a fleet often changes one file a node and keeps the others) takes
 * its size from the head: blobs are content-addressed and never removed, so the store holds it with
 * that size. Only the rest are looked up: at 100,000 nodes of two files, half the lookups.
 */
async function blobSizesFor(
  trx: Transaction<Database>,
  changed: readonly string[],
  nodes: ReadonlyMap<string, readonly ArtifactRef[]>,
  heads: Heads,
  blobs: LedgerBlobs,
): Promise<Map<string, number>> {
  const known = new Map<string, number>();
  const wanted: string[] = [];
  for (const node of changed) {
    const had = heads.get(node)?.artifacts;
    for (const a of nodes.get(node) ?? []) {
      const size = had?.find((h) => h.sha256 === a.sha256)?.size;
      if (size === undefined) wanted.push(a.sha256);
      else known.set(a.sha256, size);
    }
  }
  const sizes = await blobs.sizes(trx, wanted);
  for (const [digest, size] of known) sizes.set(digest, size);
  return sizes;
}
