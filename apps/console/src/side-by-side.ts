/**
 * A unified diff (as `GET /v1/nodes/{node}/diff` returns per artifact) laid out side by side: each
 * row has the old line on the left and the new one on the right. Removed and added lines of one run
 * are paired in order, so an edited line sits beside its replacement; the longer run is padded with
 * empty cells. Pure: no DOM, unit-tested on its own.
 */
export interface Cell {
  readonly line: number;
  readonly text: string;
}

export type Row =
  { readonly kind: 'hunk'; readonly header: string } | { readonly kind: 'same' | 'changed'; readonly left: Cell | null; readonly right: Cell | null };

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;

export function sideBySide(unified: string): Row[] {
  const rows: Row[] = [];
  let left = 0;
  let right = 0;
  let removed: Cell[] = [];
  let added: Cell[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) rows.push({ kind: 'changed', left: removed[i] ?? null, right: added[i] ?? null });
    removed = [];
    added = [];
  };
  let inHunk = false;
  for (const raw of unified.split('\n')) {
    const hunk = HUNK.exec(raw);
    if (hunk) {
      flush();
      inHunk = true;
      left = Number(hunk[1]);
      right = Number(hunk[2]);
      rows.push({ kind: 'hunk', header: raw });
      continue;
    }
    if (!inHunk || raw.startsWith('\\')) continue; // file headers before the first hunk; "\ No newline at end of file"
    const text = raw.slice(1);
    if (raw.startsWith('-')) removed.push({ line: left++, text });
    else if (raw.startsWith('+')) added.push({ line: right++, text });
    else if (raw.startsWith(' ')) {
      flush();
      rows.push({ kind: 'same', left: { line: left++, text }, right: { line: right++, text } });
    }
  }
  flush();
  return rows;
}
