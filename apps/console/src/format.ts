/** Dates in the viewer's own time zone and locale; ages the way an operator reads them. */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

export function localTime(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : '—';
}

export function age(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return 'never';
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

export function shortHash(hex: string | null | undefined): string {
  return hex ? hex.slice(0, 12) : '—';
}

/** A length of time as a plan states it: "none", "45s", "10m", "1h 30m", "7d". */
export function duration(seconds: number): string {
  if (seconds <= 0) return 'none';
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join(' ');
}

/** A share from 0 to 1 as a percentage, without a trailing ".0": 0.5 → "50 %", 0.125 → "12.5 %". */
export function percent(share: number): string {
  return `${Number((share * 100).toFixed(1))} %`;
}
