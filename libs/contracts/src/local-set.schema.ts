import { z } from 'zod';
import { ArtifactName, MAX_ARTIFACTS_PER_NODE, NodeName, Sha256, Timestamp } from './primitives.schema.js';

/**
 * A compiled set on disk, applied without a coordinator: the first node of a mesh runs the set that
 * will raise its coordinator before any coordinator exists. `retectl compile` writes, in each
 * node's folder beside its artifacts, the list of those artifacts with their digests; `flor agent apply --set`
 * checks every file against that list before it applies anything. No signature: the operator who
 * runs the command is at the keyboard of the machine it changes.
 */

/** A compiled node's digest list: the head of its entry in a compiled pack, and digests.json beside its artifacts in the folder `retectl compiled <node> --out` writes. */
export const DIGESTS_JSON = 'digests.json';
/**
 * The folder that holds a node's artifacts in the audit mirror's tree (`<node>/mgmt/`), and held them
 * in a compiled node folder written by a retectl before the artifacts sat beside digests.json.
 */
export const MGMT_DIR = 'mgmt';

export const DigestEntry = z.strictObject({
  name: ArtifactName,
  sha256: Sha256,
  size: z.number().int().nonnegative(),
});
export type DigestEntry = z.infer<typeof DigestEntry>;

/**
 * digests.json: the node the set is for, its set digest (the same digest the coordinator gives the
 * set once it is published) and every artifact in the node's folder, sorted by name. Canonical JSON like every
 * compiled file, so compiling the same rete twice writes the same bytes.
 */
export const CompiledSetDigests = z
  .strictObject({
    node: NodeName,
    set_digest: Sha256,
    artifacts: z.array(DigestEntry).max(MAX_ARTIFACTS_PER_NODE),
  })
  .superRefine((d, ctx) => {
    d.artifacts.forEach((a, i) => {
      // The list sits beside its artifacts: one of them cannot have its name.
      if (a.name === DIGESTS_JSON)
        ctx.addIssue({ code: 'custom', path: ['artifacts', i, 'name'], message: `${DIGESTS_JSON} is the list's own name, not an artifact's` });
      const prev = d.artifacts[i - 1];
      if (prev && prev.name >= a.name) {
        ctx.addIssue({
          code: 'custom',
          path: ['artifacts', i, 'name'],
          message: prev.name === a.name ? `${a.name} is listed twice` : `${a.name} is out of order: the list is sorted by name`,
        });
      }
    });
  });
export type CompiledSetDigests = z.infer<typeof CompiledSetDigests>;

/**
 * What state.json says about a local set while it is the one in effect: applied, installed and
 * activated by `flor agent apply --set`. Cleared when the first version from a coordinator takes over.
 */
export const LocalSetRecord = z.strictObject({
  node: NodeName,
  set_digest: Sha256,
  /** The folder it was applied from. */
  source: z.string(),
  applied_at: Timestamp,
  /**
   * Digest of the artifacts installed for the vertex (everything but host resources), as a set
   * digest: a coordinator's first version with the same one needs no restart of the vertex.
   */
  config_digest: Sha256,
});
export type LocalSetRecord = z.infer<typeof LocalSetRecord>;
