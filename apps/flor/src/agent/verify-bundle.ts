import type * as jose from 'jose';
import { BundlePayload } from '#contracts';
import { BundleVerifyError, setDigest, sha256Hex, verifyBundleSignature, type BundleVerifyFailure } from '#bundle';

export type RejectionCode = BundleVerifyFailure | 'bad_payload' | 'wrong_node' | 'replayed' | 'digest_mismatch';

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
  readonly pinned: jose.JSONWebKeySet;
  readonly node: string;
  readonly highWater: number;
}

/**
 * DESIGN section 5: signature against the pinned keys, the payload parses, the node is ours, the
 * version is not below the high-water mark (equal is "up to date", decided by the caller), every
 * artifact's digest and size and the set digest match.
 */
export async function verifyBundle(jws: string, ctx: VerifyContext): Promise<VerifiedBundle> {
  let bytes: Uint8Array;
  try {
    ({ payload: bytes } = await verifyBundleSignature(jws, ctx.pinned));
  } catch (err) {
    if (!(err instanceof BundleVerifyError)) throw err;
    const message =
      err.code === 'unknown_key'
        ? `${err.message}, which is not pinned: the coordinator's signing key changed since enrolment; re-enrol the node to pin the new key`
        : err.message;
    throw new BundleRejected(err.code, message, null, { cause: err });
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
      throw new BundleRejected('digest_mismatch', `artifact ${a.name} has sha256 ${digest} (${content.byteLength} bytes), the bundle says ${a.sha256} (${a.size} bytes)`, v);
    }
    files.set(a.name, content);
  }
  const digest = setDigest(payload.artifacts);
  if (digest !== payload.set_digest) throw new BundleRejected('digest_mismatch', `set digest is ${digest}, the bundle says ${payload.set_digest}`, v);
  if (payload.retired && payload.artifacts.length > 0) throw new BundleRejected('bad_payload', 'a retired bundle carries artifacts', v);
  return { payload, files };
}

/** Reads back a set the agent staged itself after verifying it: no second verification. */
export function decodeStagedPayload(jws: string): BundlePayload {
  const part = jws.split('.')[1] ?? '';
  return BundlePayload.parse(JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
}
