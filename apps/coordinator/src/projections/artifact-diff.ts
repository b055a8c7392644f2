import { createTwoFilesPatch } from 'diff';
import type { StoredArtifact } from '../db/index.js';

export interface ArtifactChange {
  name: string;
  change: 'added' | 'removed' | 'modified';
  from_sha256: string | null;
  to_sha256: string | null;
  diff: string;
}

/** Pure: which artifacts differ between two sets, each with a unified diff of its text. */
export function diffSets(
  node: string,
  from: { version: number; artifacts: readonly StoredArtifact[] },
  to: { version: number; artifacts: readonly StoredArtifact[] },
  text: (sha256: string) => string,
): ArtifactChange[] {
  const a = new Map(from.artifacts.map((x) => [x.name, x.sha256]));
  const b = new Map(to.artifacts.map((x) => [x.name, x.sha256]));
  const names = [...new Set([...a.keys(), ...b.keys()])].sort();
  const out: ArtifactChange[] = [];
  for (const name of names) {
    const x = a.get(name) ?? null;
    const y = b.get(name) ?? null;
    if (x === y) continue;
    const change = x === null ? 'added' : y === null ? 'removed' : 'modified';
    const diff = createTwoFilesPatch(
      `${node}/v${from.version}/${name}`,
      `${node}/v${to.version}/${name}`,
      x ? text(x) : '',
      y ? text(y) : '',
      undefined,
      undefined,
      { context: 3 },
    );
    out.push({ name, change, from_sha256: x, to_sha256: y, diff });
  }
  return out;
}
