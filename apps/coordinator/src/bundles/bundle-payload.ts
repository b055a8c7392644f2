import { canonicalJson, sha256Hex } from '#bundle';
import type { BundlePayload } from '#contracts';
import type { StampedArtifact } from '../ledger/domain/ledger.events.js';

/** The exact bytes that get signed: canonical JSON of the payload (the bundle format in docs/architecture.md). */
export function bundlePayloadBytes(
  stamp: { node: string; version: number; set_digest: string; retired: boolean; artifacts: readonly StampedArtifact[]; publish_id: string },
  position: number,
  issuedAt: string,
  contentOf: (sha256: string) => Uint8Array,
): Uint8Array {
  const payload: BundlePayload = {
    node: stamp.node,
    version: stamp.version,
    set_digest: stamp.set_digest,
    position,
    publish_id: stamp.publish_id,
    issued_at: issuedAt,
    retired: stamp.retired,
    artifacts: stamp.artifacts.map((a) => ({ name: a.name, sha256: a.sha256, size: a.size, content: Buffer.from(contentOf(a.sha256)).toString('base64') })),
  };
  return Buffer.from(canonicalJson(payload), 'utf8');
}

/** Strong ETag derived from the stored JWS: changes exactly when the served bytes change. */
export function etagOf(jws: string): string {
  return `"${sha256Hex(jws).slice(0, 40)}"`;
}
