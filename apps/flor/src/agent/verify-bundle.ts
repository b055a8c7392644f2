import type * as jose from 'jose';
import { BundlePayload } from '#contracts';
import {
  BundleVerifyError,
  setDigest,
  sha256Hex,
  verifyBundleSignature,
  type BundleVerifyFailure,
  type CheckpointFailure,
  type TrustChainFailure,
} from '#bundle';

export type RejectionCode =
  | BundleVerifyFailure
  | 'bad_payload'
  | 'wrong_node'
  | 'replayed'
  /** The version applied here, sent with another set: a history this node did not follow. */
  | 'version_conflict'
  | 'digest_mismatch'
  | 'revoked_key'
  | 'stamped_after_checkpoint'
  | TrustChainFailure
  | 'trust_unavailable'
  | CheckpointFailure
  | 'checkpoint_rollback'
  | 'checkpoint_fork'
  | 'checkpoint_origin'
  /** The bundle's stamp is not shown in the signed tree (proofs on the wire). */
  | 'not_in_log'
  /** An answer without the tree's proofs, to an agent that has seen them before. */
  | 'proof_missing';

/** A bundle the agent will not apply; the reason goes to the operator and into the report. */
export class BundleRejected extends Error {
  constructor(
    readonly code: RejectionCode,
    message: string,
    /** The version the bundle claims, when it got far enough to say. */
    readonly version: number | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BundleRejected';
  }
}

export interface VerifiedBundle {
  readonly payload: BundlePayload;
  readonly files: ReadonlyMap<string, Buffer>;
}

export interface VerifyContext {
  /** The keys of the trust version the agent holds. */
  readonly pinned: jose.JSONWebKeySet;
  /** That version's number and the keys it revoked, to say why a key is refused. */
  readonly trustVersion: number | null;
  readonly revoked: readonly string[];
  readonly node: string;
  readonly highWater: number;
  /** The position of the newest checkpoint the agent verified; null when it holds none. */
  readonly checkpointPosition: number | null;
}

/**
 * Signature against the trusted keys, the payload parses, the node is ours, the version is not
 * below the high-water mark (equal is "up to date", decided by the caller), every artifact's digest
 * and size and the set digest match, and the bundle was stamped no later than the newest checkpoint
 * the agent verified (a bundle from another ledger, or from past the ledger it can vouch for, is not).
 */
export async function verifyBundle(jws: string, ctx: VerifyContext): Promise<VerifiedBundle> {
  let bytes: Uint8Array;
  try {
    ({ payload: bytes } = await verifyBundleSignature(jws, ctx.pinned));
  } catch (err) {
    if (!(err instanceof BundleVerifyError)) throw err;
    if (err.code === 'unknown_key') {
      const kid = kidOf(jws) ?? '?';
      const trust = ctx.trustVersion === null ? 'the key pinned at enrolment' : `trust version ${ctx.trustVersion}`;
      if (ctx.revoked.includes(kid)) throw new BundleRejected('revoked_key', `bundle is signed by key ${kid}, which ${trust} revoked`, null, { cause: err });
      throw new BundleRejected('unknown_key', `${err.message}, which ${trust} does not list`, null, { cause: err });
    }
    throw new BundleRejected(err.code, err.message, null, { cause: err });
  }
  let payload: BundlePayload;
  try {
    const parsed = BundlePayload.safeParse(JSON.parse(Buffer.from(bytes).toString('utf8')));
    if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
    payload = parsed.data;
  } catch (cause) {
    throw new BundleRejected('bad_payload', `payload does not match the bundle contract: ${(cause as Error).message}`, null, { cause });
  }
  const v = payload.version;
  if (payload.node !== ctx.node) throw new BundleRejected('wrong_node', `bundle is for node ${payload.node}, this node is ${ctx.node}`, v);
  if (v < ctx.highWater) throw new BundleRejected('replayed', `version ${v} is older than the high-water mark ${ctx.highWater} (replayed bundle)`, v);
  const files = new Map<string, Buffer>();
  for (const a of payload.artifacts) {
    if (files.has(a.name)) throw new BundleRejected('bad_payload', `artifact ${a.name} appears twice`, v);
    const content = Buffer.from(a.content, 'base64');
    const digest = sha256Hex(content);
    if (digest !== a.sha256 || content.byteLength !== a.size) {
      throw new BundleRejected(
        'digest_mismatch',
        `artifact ${a.name} has sha256 ${digest} (${content.byteLength} bytes), the bundle says ${a.sha256} (${a.size} bytes)`,
        v,
      );
    }
    files.set(a.name, content);
  }
  const digest = setDigest(payload.artifacts);
  if (digest !== payload.set_digest) throw new BundleRejected('digest_mismatch', `set digest is ${digest}, the bundle says ${payload.set_digest}`, v);
  if (payload.retired && payload.artifacts.length > 0) throw new BundleRejected('bad_payload', 'a retired bundle carries artifacts', v);
  if (ctx.checkpointPosition === null || payload.position > ctx.checkpointPosition) {
    const held =
      ctx.checkpointPosition === null
        ? 'this agent holds no verified checkpoint'
        : `the newest checkpoint this agent verified is at position ${ctx.checkpointPosition}`;
    throw new BundleRejected('stamped_after_checkpoint', `bundle was stamped at ledger position ${payload.position}, but ${held}`, v);
  }
  return { payload, files };
}

/** The kid a compact JWS names in its header, or null when it names none (it is then rejected as malformed). */
export function kidOf(jws: string): string | null {
  try {
    const header = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf('.')), 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof header.kid === 'string' ? header.kid : null;
  } catch {
    return null;
  }
}

/** Reads back a set the agent staged itself after verifying it: no second verification. */
export function decodeStagedPayload(jws: string): BundlePayload {
  const part = jws.split('.')[1] ?? '';
  return BundlePayload.parse(JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
}
