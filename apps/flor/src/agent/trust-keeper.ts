import {
  CheckpointError,
  compareCheckpoints,
  firstVersionListing,
  openCheckpoint,
  parseCheckpoint,
  TrustChainError,
  walkTrustChain,
  type TrustPin,
} from '#bundle';
import { TrustKey, type AgentIdentity, type AgentTrust, type HeldCheckpoint } from '#contracts';
import { AgentError } from '../errors.js';
import type { CoordinatorClient } from './coordinator-client.js';
import type { StateDir } from './state-dir.js';
import { BundleRejected } from './verify-bundle.js';

/**
 * What this agent trusts, and the newest checkpoint it verified. A key it does not know, or a
 * checkpoint naming a newer trust version, makes it fetch the chain from its pinned version and
 * walk it; the pin moves forward (trust.json, written whole) only when every step verified. Nothing
 * is written on a dry run.
 */
export class TrustKeeper {
  private walked = false;

  constructor(
    private readonly dir: StateDir,
    private readonly identity: AgentIdentity,
    private readonly client: CoordinatorClient,
    private readonly persist: boolean,
    private readonly now: () => Date,
    private pin: TrustPin | null = null,
  ) {}

  /** The trust held for this enrolment: trust.json, or null when only the enrolment key is trusted. */
  private held(): TrustPin | null {
    if (this.pin) return this.pin;
    const t = this.dir.readTrust();
    return t && t.enrolled_at === this.identity.enrolled_at ? { version: t.version, keys: t.keys, revoked: t.revoked, digest: t.digest } : null;
  }

  /** The keys enrolment pinned: trusted at whichever version first lists them. */
  private enrolmentKeys(): TrustKey[] {
    return this.identity.pinned_jwks.keys.map((k) => TrustKey.parse(k));
  }

  /** The keys to check `kid` against: walks first when the kid is unknown or a newer version is known to exist. */
  async trustFor(kid: string | null, newerThan: number | null = null): Promise<{ pin: TrustPin | null; keys: TrustKey[] }> {
    const held = this.held();
    const keys = held ? [...held.keys] : this.enrolmentKeys();
    const known = kid === null || keys.some((k) => k.kid === kid) || (held?.revoked.includes(kid) ?? false);
    const behind = newerThan !== null && (held === null || newerThan > held.version);
    if ((known && !behind) || this.walked) return { pin: held, keys };
    const pin = await this.walk(held);
    return { pin, keys: [...pin.keys] };
  }

  private async walk(held: TrustPin | null): Promise<TrustPin> {
    this.walked = true;
    let chain;
    try {
      chain = await this.client.fetchTrust(held?.version ?? 0);
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      throw new BundleRejected('trust_unavailable', `the signer is not trusted yet and the trust chain could not be fetched: ${err.message}`, null, {
        cause: err,
      });
    }
    const documents = chain.versions.map((v) => v.document);
    try {
      let start = held;
      if (!start) {
        const keys = this.enrolmentKeys();
        const first = Math.min(...keys.map((k) => firstVersionListing(documents, k.kid) ?? Number.POSITIVE_INFINITY));
        if (!Number.isFinite(first))
          throw new TrustChainError('trust_forged', null, `no trust version lists the key pinned at enrolment (${keys.map((k) => k.kid).join(', ')})`);
        start = { version: first, keys, revoked: [], digest: null };
      }
      const next = walkTrustChain(start, documents);
      if (this.persist && (!held || next.version > held.version)) {
        const record: AgentTrust = {
          enrolled_at: this.identity.enrolled_at,
          version: next.version,
          keys: [...next.keys],
          revoked: [...next.revoked],
          digest: next.digest,
        };
        this.dir.writeTrust(record);
      }
      this.pin = next;
      return next;
    } catch (err) {
      if (!(err instanceof TrustChainError)) throw err;
      throw new BundleRejected(err.code, err.message, null, { cause: err });
    }
  }

  /** The newest checkpoint verified for this enrolment. */
  heldCheckpoint(): HeldCheckpoint | null {
    const c = this.dir.readCheckpoint();
    return c && c.enrolled_at === this.identity.enrolled_at ? c : null;
  }

  /**
   * Verifies the checkpoint an answer carried and keeps it when it is newer. Refuses one signed by
   * no trusted key (after walking), an older one, one of another ledger, or one that gives a held
   * position another hash. Returns the newest verified checkpoint (null when there is none).
   */
  async acceptCheckpoint(note: string | null): Promise<HeldCheckpoint | null> {
    const held = this.heldCheckpoint();
    if (note === null) return held;
    let opened;
    try {
      const claimed = parseCheckpoint(note).checkpoint;
      const { keys } = await this.trustFor(null, claimed.trustVersion);
      try {
        opened = openCheckpoint(note, keys);
      } catch (err) {
        if (!(err instanceof CheckpointError) || err.code !== 'checkpoint_unknown_signer' || this.walked) throw err;
        // Signed by a key this agent has not met: a rotation it has not walked to yet.
        opened = openCheckpoint(note, [...(await this.walk(this.held())).keys]);
      }
    } catch (err) {
      if (!(err instanceof CheckpointError)) throw err;
      throw new BundleRejected(err.code, err.message, null, { cause: err });
    }
    const c = opened.checkpoint;
    const order = compareCheckpoints(
      held ? { origin: held.origin, position: held.position, hash: held.hash, time: held.time, trustVersion: held.trust_version } : null,
      c,
    );
    if (typeof order === 'object') throw new BundleRejected(order.refused, order.reason, null);
    if (order === 'same') return held;
    const next: HeldCheckpoint = {
      enrolled_at: this.identity.enrolled_at,
      note,
      origin: c.origin,
      position: c.position,
      hash: c.hash,
      time: c.time,
      trust_version: c.trustVersion,
      received_at: this.now().toISOString(),
    };
    if (this.persist) this.dir.writeCheckpoint(next);
    return next;
  }
}
