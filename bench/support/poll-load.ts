import autocannon from 'autocannon';

/** One autocannon turn of 304 polls against one server, with what it must have answered. */
export interface PollSide {
  readonly name: string;
  readonly result: autocannon.Result;
  /** Responses that are not 304 although every request carried the current ETag. */
  readonly unexpected: number;
  /** Socket errors, timeouts and answers outside 2xx/3xx. */
  readonly errors: number;
  /** 304s autocannon received, warm-up included. */
  readonly all304: number;
}

export interface PollLoadOptions {
  readonly connections: number;
  /** Seconds measured. */
  readonly duration: number;
  /** Seconds of load before the measured run, not counted (0: none). */
  readonly warmup: number;
}

async function load(url: string, headers: Record<string, string>, connections: number, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url, method: 'GET', headers, connections, duration: seconds, timeout: 10 });
}

/** Loads `url` with the same conditional GET from every connection: a warm-up (if any), then the measured run. */
export async function measurePolls(
  name: string,
  url: string,
  headers: Record<string, string>,
  opts: PollLoadOptions,
  say: (line: string) => void,
): Promise<PollSide> {
  let warm304 = 0;
  if (opts.warmup > 0) {
    say(`${name}: warm-up ${opts.warmup} s`);
    warm304 = (await load(url, headers, opts.connections, opts.warmup)).statusCodeStats['304']?.count ?? 0;
  }
  say(`${name}: measuring ${opts.duration} s with ${opts.connections} connections`);
  const result = await load(url, headers, opts.connections, opts.duration);
  const responses = Object.values(result.statusCodeStats).reduce((n, s) => n + s.count, 0);
  const ok304 = result.statusCodeStats['304']?.count ?? 0;
  // autocannon's `errors` already includes its `timeouts`.
  const errors = result.errors + result['1xx'] + result['4xx'] + result['5xx'];
  return { name, result, unexpected: responses - ok304, errors, all304: warm304 + ok304 };
}

/** What went wrong in a turn, for stderr; null when it answered only 304s. */
export function pollProblem(s: PollSide): string | null {
  if (s.errors === 0 && s.unexpected === 0) return null;
  const codes = Object.entries(s.result.statusCodeStats)
    .map(([code, { count }]) => `${code}: ${count}`)
    .join(', ');
  return `${s.name}: ${s.errors} errors (${s.result.errors - s.result.timeouts} socket errors, ${s.result.timeouts} timeouts), ${s.unexpected} answers other than 304; status codes ${codes}`;
}
