export interface NodeStatusInput {
  /** Null for a node that was enrolled or given a token but never published. */
  readonly version: number | null;
  /** The coordinator's lifecycle state, when it reports one (unenrolled, pending, enrolled, revoked, retired). */
  readonly state?: string;
  readonly retired: boolean;
  readonly applied_version: number | null;
  readonly last_contact: string | null;
  readonly last_result: string | null;
}

export type NodeState = 'retired' | 'revoked' | 'not published' | 'never seen' | 'failed' | 'rejected' | 'pending' | 'in sync';

/** A node's state as an operator reads it: no age threshold, only what the node last said. */
export function nodeState(n: NodeStatusInput): NodeState {
  if (n.retired) return 'retired';
  if (n.state === 'revoked') return 'revoked';
  if (n.version === null) return 'not published';
  if (n.last_contact === null) return 'never seen';
  if (n.last_result === 'failed') return 'failed';
  if (n.last_result === 'rejected') return 'rejected';
  return n.applied_version === n.version ? 'in sync' : 'pending';
}

/** `42s`, `3m`, `5h12m`, `3d4h`: the age of a timestamp at `now`, coarse enough to read at a glance. */
export function formatAge(since: string | null, now: Date): string {
  if (since === null) return 'never';
  const seconds = Math.max(0, Math.floor((now.getTime() - new Date(since).getTime()) / 1000));
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
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
