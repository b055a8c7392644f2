import {
  CheckpointError,
  checkFrontier,
  checkStampIncluded,
  checkTreeExtends,
  checkTreeExtendsFrontier,
  decodeProof,
  frontierRoot,
  decodeStampLeaf,
  LogProofError,
  openTreeCheckpoint,
  parseTreeCheckpoint,
  TREE_CONSISTENCY_HEADER,
  TREE_PROOF_HEADER,
  TREE_INCLUSION_HEADER,
  treeOrigin,
  type TreeCheckpoint,
} from '#bundle';
import type { AgentIdentity, BundlePayload, HeldCheckpoint, HeldTreeCheckpoint } from '#contracts';
import type { BundleFetch, TreeHolding } from './coordinator-client.js';
import type { StateDir } from './state-dir.js';
import type { TrustKeeper } from './trust-keeper.js';
import { BundleRejected, type RejectionCode } from './verify-bundle.js';

/**
 * The frontier `held` keeps, once it makes up its tree (its hashes fold to the held root); null when
 * it keeps none or one that does not (a file edited or cut short), and the agent then asks for the
 * frontier again rather than trust it.
 */
export function heldFrontier(held: HeldTreeCheckpoint | null): Buffer[] | null {
  if (!held?.frontier) return null;
  const frontier = held.frontier.map((h) => Buffer.from(h, 'hex'));
  return frontierRoot(held.size, frontier)?.toString('hex') === held.root ? frontier : null;
}

/** What a poll says it holds of the tree: nothing, a tree's root only, or its frontier too. */
export function treeHolding(held: HeldTreeCheckpoint | null): TreeHolding {
  return held ? { size: held.size, frontier: heldFrontier(held) !== null } : { size: 0, frontier: true };
}

/**
 * Proofs on the wire, the node's side (docs/decisions/0014-proofs-on-the-wire.md): every answer's
 * tree checkpoint must be signed by a trusted key, of this ledger's tree, and extend the one the
 * agent holds (a consistency proof from its size); a new bundle must be in it (the inclusion proof
 * of the stamp event the agent rebuilds from the bundle). Until the agent has once seen a tree
 * checkpoint, an answer without one (a coordinator of an earlier release) is taken with a warning;
 * from then on it is refused.
 */
export class TreeKeeper {
  constructor(
    private readonly dir: StateDir,
    private readonly identity: AgentIdentity,
    private readonly trust: TrustKeeper,
    private readonly now: () => Date,
    /** Told when an answer without proofs is taken (trust on first use). */
    private readonly noProofs: () => void = () => {},
  ) {}

  /** The newest tree checkpoint verified for this enrolment. */
  held(): HeldTreeCheckpoint | null {
    const c = this.dir.readTreeCheckpoint();
    return c && c.enrolled_at === this.identity.enrolled_at ? c : null;
  }

  /**
   * Checks the tree headers of `fetched` (with `payload`, the bundle it verified, for a 200) against
   * the tree held and `chain`, the ledger checkpoint accepted from the same answer. Returns the tree
   * checkpoint to keep, or null when there is nothing new to keep; throws BundleRejected.
   */
  async check(fetched: BundleFetch, payload: BundlePayload | null, chain: HeldCheckpoint | null): Promise<HeldTreeCheckpoint | null> {
    if (fetched.status === 'none') return null;
    const version = payload?.version ?? null;
    const refuse = (code: RejectionCode, why: string): never => {
      throw new BundleRejected(code, why, version);
    };
    const held = this.held();
    const note = fetched.tree.checkpoint;
    if (note === null) {
      if (held)
        refuse(
          'proof_missing',
          `the answer carries no tree checkpoint or proofs, and this agent has verified them since tree size ${held.size}: a coordinator that stopped proving its log is not followed`,
        );
      this.noProofs();
      return null;
    }
    let c: TreeCheckpoint;
    try {
      const { keys } = await this.trust.trustFor(null, parseTreeCheckpoint(note).trustVersion);
      c = openTreeCheckpoint(note, keys).checkpoint;
    } catch (err) {
      if (!(err instanceof CheckpointError)) throw err;
      return refuse(err.code, `tree checkpoint: ${err.message}`);
    }
    const origin = held?.origin ?? (chain ? treeOrigin(chain.origin) : c.origin);
    if (c.origin !== origin) refuse('checkpoint_origin', `tree checkpoint of ${c.origin}, this agent follows ${origin}`);
    if (chain && chain.position === c.size && chain.hash !== c.chain)
      refuse('checkpoint_fork', `the tree checkpoint of ${c.size} entries names another chain hash than the ledger checkpoint of that position`);
    // What the extension or consistency proof showed: the inclusion proof of the same answer leaves those hashes out.
    let known: Map<string, Buffer> | null = null;
    // The new tree's frontier, when this answer shows it (kept for the next answer's proof to start from).
    let frontier: Buffer[] | null = null;
    try {
      const kept = heldFrontier(held);
      if (fetched.tree.extension !== null) {
        if (held && !kept) refuse('checkpoint_fork', `an extension proof came for the frontier of ${held.size} entries, which this agent does not keep`);
        const shown = checkTreeExtendsFrontier(held && { ...held, frontier: kept! }, c, decodeProof(fetched.tree.extension, TREE_PROOF_HEADER));
        known = shown.known;
        frontier = shown.frontier;
      } else {
        const consistency = fetched.tree.consistency === null ? null : decodeProof(fetched.tree.consistency, TREE_CONSISTENCY_HEADER);
        known = checkTreeExtends(held, c, consistency);
        // A frontier sent beside it, for an agent that held only a root; one held already is kept if the tree did not move.
        if (fetched.tree.frontier !== null) frontier = checkFrontier(fetched.tree.frontier, c);
        else if (kept && held!.size === c.size) frontier = kept;
      }
    } catch (err) {
      if (!(err instanceof LogProofError)) throw err;
      refuse(err.code === 'proof_malformed' ? 'checkpoint_fork' : err.code, err.message);
    }
    if (payload) {
      if (fetched.tree.inclusion === null || fetched.tree.leaf === null)
        refuse('not_in_log', `version ${payload.version} came without the proof that it is in the signed log`);
      try {
        checkStampIncluded(payload, decodeStampLeaf(fetched.tree.leaf!), decodeProof(fetched.tree.inclusion!, TREE_INCLUSION_HEADER), c, known);
      } catch (err) {
        if (!(err instanceof LogProofError)) throw err;
        refuse('not_in_log', err.message);
      }
    }
    const hexes = frontier?.map((h) => h.toString('hex'));
    if (held && held.size === c.size && held.note === note && hexes?.join() === held.frontier?.join()) return null;
    return {
      enrolled_at: this.identity.enrolled_at,
      note,
      origin: c.origin,
      size: c.size,
      root: c.root,
      time: c.time,
      received_at: this.now().toISOString(),
      ...(hexes ? { frontier: hexes } : {}),
    };
  }
}
