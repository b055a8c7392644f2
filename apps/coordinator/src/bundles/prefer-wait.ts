/**
 * The watch's request and its timing, as plain functions: `Prefer: wait=<seconds>` (RFC 7240) on the
 * poll, capped by the coordinator, and the held watch's deadline with its jitter.
 */

/** The longest wait a client may name at all; anything longer is a malformed request, not a preference to cap. */
export const MAX_PREFER_WAIT_SECONDS = 86_400;

/** What `Prefer` asks of the poll: the wait in whole seconds, or null when it asks none. */
export type PreferWait = { readonly ok: true; readonly wait: number | null } | { readonly ok: false; readonly reason: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Parses the Prefer header (RFC 7240 section 2: comma-separated preferences, each `token [= value]`
 * with `;` parameters) and returns the `wait` preference. Preferences other than `wait` are ignored,
 * as the RFC asks; of several `wait`s the first counts. A `wait` whose value is not delta-seconds
 * (RFC 9110: digits) or is longer than a day is refused: a client that sends it has a bug, and
 * holding or not holding on a guess would hide it.
 */
export function parsePreferWait(header: string | string[] | undefined): PreferWait {
  if (header === undefined) return { ok: true, wait: null };
  const text = Array.isArray(header) ? header.join(',') : header;
  for (const preference of text.split(',')) {
    const head = preference.split(';')[0].trim();
    if (head === '') continue;
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim();
    if (!TOKEN.test(name)) return { ok: false, reason: `Prefer: ${JSON.stringify(name.slice(0, 40))} is not a preference name` };
    if (name.toLowerCase() !== 'wait') continue;
    if (eq < 0) return { ok: false, reason: 'Prefer: wait needs a value in seconds (wait=30)' };
    let value = head.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!/^[0-9]{1,6}$/.test(value))
      return { ok: false, reason: `Prefer: wait must be whole seconds from 0 to ${MAX_PREFER_WAIT_SECONDS} (got ${JSON.stringify(value.slice(0, 40))})` };
    const wait = Number(value);
    if (wait > MAX_PREFER_WAIT_SECONDS) return { ok: false, reason: `Prefer: wait must be whole seconds from 0 to ${MAX_PREFER_WAIT_SECONDS} (got ${wait})` };
    return { ok: true, wait };
  }
  return { ok: true, wait: null };
}

/** The wait the coordinator grants: what was asked, at most its cap. */
export function appliedWait(asked: number, capSeconds: number): number {
  return Math.min(asked, capSeconds);
}

/**
 * When a watch held for `seconds` expires: that long plus up to a sixteenth more at random, so that
 * watches made together (a fleet reconnecting after a replica loss) do not all expire, and come back,
 * together.
 */
export function watchDeadline(nowMs: number, seconds: number, random: number): number {
  return nowMs + seconds * 1000 + Math.floor(random * ((seconds * 1000) / 16));
}

/**
 * Retry-After for a watch refused (too many held, or shutting down): spread over `spreadSeconds` so
 * the refused agents do not all come back in the same second.
 */
export function refusalRetryAfter(spreadSeconds: number, random: number): number {
  return 1 + Math.floor(random * Math.max(1, spreadSeconds));
}
