import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { html } from './html.js';

export type Loaded<T> = { state: 'loading' } | { state: 'error'; error: ApiError } | { state: 'done'; data: T; at: number };

/**
 * GETs `path` whenever it changes, and again every `refreshMs` while `keepRefreshing(data)` holds:
 * a page that watches nodes converge stops asking once they have.
 */
export function useApi<T>(path: string | null, refreshMs = 0, keepRefreshing: (data: T) => boolean = () => true): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async (first: boolean) => {
      if (first) setLoaded({ state: 'loading' });
      try {
        const data = await api<T>(path);
        if (!live) return;
        setLoaded({ state: 'done', data, at: Date.now() });
        if (refreshMs > 0 && keepRefreshing(data)) timer = setTimeout(() => void run(false), refreshMs);
      } catch (err) {
        if (!live) return;
        setLoaded({ state: 'error', error: err instanceof ApiError ? err : new ApiError(0, 'error', String(err)) });
      }
    };
    void run(true);
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [path, tick]);
  return [loaded, () => setTick((t) => t + 1)];
}

/** What a page shows instead of its data: loading, or the error with what to do next. */
export function Pending({ loaded, what }: { loaded: Loaded<unknown>; what: string }) {
  if (loaded.state === 'loading') return html`<p class="muted" role="status">Loading ${what}…</p>`;
  if (loaded.state === 'error') return html`<${ErrorBox} error=${loaded.error} what=${what} />`;
  return null;
}

export function ErrorBox({ error, what }: { error: ApiError; what: string }) {
  const next =
    error.status === 403
      ? 'This token may not read it: ask an admin for a reader token.'
      : error.status === 404
        ? 'Check the name or go back to the fleet.'
        : error.status === 0
          ? 'Check that the coordinator is running, then reload.'
          : error.status === 429
            ? 'Wait a minute, then reload.'
            : 'Reload the page; if it persists, the coordinator log has the details.';
  return html`<div class="error" role="alert"><strong>Could not load ${what}:</strong> ${error.message} <span class="code">(${error.code})</span><p>${next}</p></div>`;
}
