/**
 * The console's only way to the coordinator: the same REST API a script uses, with the viewer's
 * API token. The token lives in sessionStorage, so it is kept for this tab only and gone when the
 * tab closes; answers are never cached (`no-store`), so the page holds nothing the token could not
 * fetch again.
 */
const TOKEN_KEY = 'florete.console.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** The token was refused: expired, revoked or mistyped. The viewer has to sign in again. */
  get signedOut(): boolean {
    return this.status === 401;
  }
}

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token: string): void => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

let onSignedOut: (reason: string) => void = () => undefined;
/** Called once by the shell: what to do when any request finds the token refused. */
export function whenSignedOut(handler: (reason: string) => void): void {
  onSignedOut = handler;
}

/**
 * `body` is sent as JSON. `signal` cancels the request: the error it throws then is the DOM's
 * AbortError, not an ApiError, so a caller that aborted can tell it from a failure (see `aborted`).
 */
export async function api<T>(path: string, init: { method?: 'GET' | 'POST'; token?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const token = init.token ?? session.token();
  if (!token) throw new ApiError(401, 'unauthenticated', 'sign in with an API token first');
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      headers,
      cache: 'no-store',
      signal: init.signal,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  } catch (err) {
    if (aborted(err)) throw err;
    throw new ApiError(
      0,
      'unreachable',
      `the coordinator did not answer (${(err as Error).message}); check that it is running and reachable from this browser`,
    );
  }
  if (!res.ok) {
    let problem: { code?: string; detail?: string; title?: string } = {};
    try {
      problem = (await res.json()) as typeof problem;
    } catch {
      // Not problem+json (a proxy's error page, say): the status line says enough.
    }
    const error = new ApiError(res.status, problem.code ?? `http_${res.status}`, problem.detail ?? problem.title ?? `${res.status} ${res.statusText}`);
    if (error.signedOut && init.token === undefined) {
      session.signOut();
      onSignedOut(`The coordinator refused your token (${error.message}). It may have expired or been revoked: sign in with a current one.`);
    }
    throw error;
  }
  return (await res.json()) as T;
}

/** Whether `err` is a request cancelled through its AbortSignal (the page that asked is gone). */
export function aborted(err: unknown): boolean {
  return err instanceof DOMException && err.name === 'AbortError';
}

/** Encodes a query string, leaving out unset values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
