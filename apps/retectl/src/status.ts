export interface NodeStatusInput {
  /** The coordinator's lifecycle word: unmanaged, enrolled or retired. */
  readonly state: string;
  /** converged, outstanding or failed; null when nothing was ever published for the node. */
  readonly convergence: string | null;
  /** A failed briefing line at its last enrolment. */
  readonly ineligible: boolean;
}

/**
 * A node's state as an operator reads it: its lifecycle, then whether it runs its head version, then
 * `ineligible`. No age threshold: a silent node is outstanding, never failed. An unmanaged node (no
 * agent ever enrolled as it) is outstanding by definition, so its convergence is left out.
 * The lifecycle word is the API's, as `status --json` and `--state` use it: a table with words of its
 * own would leave an operator guessing what to filter or script on.
 */
export function nodeState(n: NodeStatusInput): string {
  const parts = [n.state];
  if (n.convergence !== null && n.state !== 'unmanaged') parts.push(n.convergence);
  if (n.ineligible) parts.push('ineligible');
  return parts.join(', ');
}

/** `42s`, `3m`, `5h12m`, `3d4h`: the age of a timestamp at `now`, coarse enough to read at a glance. */
export function formatAge(since: string | null, now: Date): string {
  if (since === null) return 'never';
  return formatSeconds(Math.floor((now.getTime() - new Date(since).getTime()) / 1000));
}

/** A span of whole seconds as formatAge writes it. */
export function formatSeconds(span: number): string {
  const seconds = Math.max(0, Math.floor(span));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h${minutes % 60 ? `${minutes % 60}m` : ''}`;
  const days = Math.floor(hours / 24);
  return `${days}d${hours % 24 ? `${hours % 24}h` : ''}`;
}

/** Plain text table: columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
