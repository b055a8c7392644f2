import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export interface ArtifactRef {
  readonly name: string;
  readonly sha256: string;
}

/** Set digest = sha256 of canonical JSON of [{name, sha256}] sorted by name: the same tree gives the same digest on every machine. */
export function setDigest(artifacts: readonly ArtifactRef[]): string {
  const sorted = [...artifacts]
    .map(({ name, sha256 }) => ({ name, sha256 }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sha256Hex(canonicalJson(sorted));
}

/** The digest of the empty set: what a retired node carries. */
export const EMPTY_SET_DIGEST = setDigest([]);
