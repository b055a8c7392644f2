import { canonicalJson, sha256Hex } from '#bundle';
import type { BundlePayload } from '#contracts';
import type { StampedArtifact } from './ledger.events.js';

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

/**
 * The strong ETag of a head's bundle, known without signing it: the stamped event's chain hash covers
 * every byte of the payload (node, version, set digest, position, publish, issue time, and each
 * artifact's digest, which names its content), and Ed25519 is deterministic, so the key's kid
 * completes what the served JWS will be. Changes exactly when the served bytes change: a new version,
 * or the same one re-signed by another key.
 */
export function bundleEtag(kid: string, eventHash: string): string {
  return `"${sha256Hex(`${kid}:${eventHash}`).slice(0, 40)}"`;
}
