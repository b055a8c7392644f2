import { setDigest, sha256Hex } from '#bundle';
import type { AgentState } from '#contracts';
import { isResourceArtifact } from './installer.js';

/** The digest of what a set installs for the vertex: every artifact but its host resources, as a set digest. */
export function configDigest(files: ReadonlyMap<string, Uint8Array>): string {
  return setDigest([...files].filter(([name]) => !isResourceArtifact(name)).map(([name, bytes]) => ({ name, sha256: sha256Hex(bytes) })));
}

/**
 * Whether a coordinator's version taking over from the local set in effect installs for the vertex
 * exactly what the local set did: then the vertex already runs it, and a restart would only drop its
 * connections. Compared with the local set's own record, never with what is installed now, so a pass
 * that finishes an interrupted takeover decides the same.
 */
export function keepsLocalConfig(state: AgentState, files: ReadonlyMap<string, Uint8Array>): boolean {
  return state.local_set !== null && state.local_set.config_digest === configDigest(files);
}
