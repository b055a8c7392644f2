/** A plain-text table: first column left-aligned, the others right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function ms(n: number): string {
  return n >= 100 ? `${fmt(n)} ms` : `${fmt(n, n >= 10 ? 1 : 2)} ms`;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** A timed run of a process: its wall time and the CPU time it used (user + system). */
export interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** The median wall time of `runs` with their median CPU time beside it: `1,234 ms (cpu 1,100 ms)`. */
export function wallAndCpu(runs: readonly Timed[]): string {
  return `${ms(medianOf(runs, 'wallMs'))} (cpu ${ms(medianOf(runs, 'cpuMs'))})`;
}

/** The median of one of `runs`' times. */
export function medianOf(runs: readonly Timed[], key: keyof Timed): number {
  return median(runs.map((r) => r[key]));
}
