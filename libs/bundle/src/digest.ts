import { hash } from 'node:crypto';

/** One-shot hashing: cheaper than createHash for the small inputs digests are mostly taken of (bench:primitives). */
export function sha256Hex(data: Uint8Array | string): string {
  return hash('sha256', data, 'hex');
}

export interface ArtifactRef {
  readonly name: string;
  readonly sha256: string;
}

/**
 * Set digest = sha256 of canonical JSON of [{name, sha256}] sorted by name: the same tree gives the
 * same digest on every machine. The canonical text is written directly (keys `name` then `sha256`,
 * strings as JSON.stringify writes them), which is exactly what canonicalJson gives for this shape
 * (a unit test holds the two together): a publish of 10,000 nodes computes 10,000 of these.
 */
export function setDigest(artifacts: readonly ArtifactRef[]): string {
  const sorted = [...artifacts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let text = '[';
  for (let i = 0; i < sorted.length; i++) text += `${i ? ',' : ''}{"name":${quoted(sorted[i].name)},"sha256":${quoted(sorted[i].sha256)}}`;
  return sha256Hex(`${text}]`);
}

/** Printable ASCII without `"` and `\`: what JSON.stringify writes between quotes unchanged. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A string as JSON.stringify writes it; names and digests are almost always plain, and skip it. */
function quoted(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}

/** The digest of the empty set: what a retired node carries. */
export const EMPTY_SET_DIGEST = setDigest([]);
