import { z } from 'zod';
import { ArtifactName, NodeName, Position, Sha256, Timestamp } from './primitives.schema.js';

/** The signed payload of a node's bundle (docs/architecture.md describes the bundle format). Content is base64 so any bytes travel. */
export const BundleArtifact = z.strictObject({
  name: ArtifactName,
  sha256: Sha256,
  size: z.number().int().nonnegative(),
  content: z.string().describe('base64'),
});
export const BundlePayload = z.strictObject({
  node: NodeName,
  version: z.number().int().positive(),
  set_digest: Sha256,
  position: Position,
  publish_id: z.string(),
  issued_at: Timestamp,
  retired: z.boolean(),
  artifacts: z.array(BundleArtifact),
});
export type BundlePayload = z.infer<typeof BundlePayload>;
