import { useEffect, useRef, useState } from 'preact/hooks';
import { aborted, api, ApiError } from './api.js';
import { html } from './html.js';

export type Loaded<T> = { state: 'loading' } | { state: 'error'; error: ApiError } | { state: 'done'; data: T; at: number };

const LOADING = { state: 'loading' } as const;

/**
 * GETs `path` whenever it changes, and again every `refreshMs` while `keepRefreshing(data)` holds:
 * a page that watches nodes converge stops asking once they have.
 *
 * What it hands back is always `path`'s: the render that follows a change of path sees loading, not
 * the answer for the path before (a fleet filtered by state never shows the unfiltered rows under
 * the new filter, not even for the frame before the request goes out).
 */
export function useApi<T>(path: string | null, refreshMs = 0, keepRefreshing: (data: T) => boolean = () => true): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<{ path: string | null; loaded: Loaded<T> }>({ path, loaded: LOADING });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async (first: boolean) => {
      if (first) setLoaded({ path, loaded: LOADING });
      try {
        const data = await api<T>(path);
        if (!live) return;
        setLoaded({ path, loaded: { state: 'done', data, at: Date.now() } });
        if (refreshMs > 0 && keepRefreshing(data)) timer = setTimeout(() => void run(false), refreshMs);
      } catch (err) {
        if (!live) return;
        setLoaded({ path, loaded: { state: 'error', error: err instanceof ApiError ? err : new ApiError(0, 'error', String(err)) } });
      }
    };
    void run(true);
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [path, tick]);
  return [loaded.path === path ? loaded.loaded : LOADING, () => setTick((t) => t + 1)];
}

export type Followed<T> = { state: 'loading' } | { state: 'error'; error: ApiError } | { state: 'done'; data: T; following: boolean; problem: ApiError | null };

/**
 * Follows `path` for a page left open while something moves: GETs it, then again `everyMs` after
 * each answer while `keepGoing(data)` holds. Unlike useApi's refresh:
 * - an answer equal to the one shown changes no state, so the page does not render again;
 * - a refresh that fails keeps what is shown, says so (`problem`), and tries again later, backing
 *   off, when the failure may pass (unreachable, 429, 5xx); any other stops following;
 * - nothing is asked while the tab is hidden, and showing it again asks at once;
 * - leaving the page cancels the timer and the request in flight;
 * - like useApi, what it hands back is always `path`'s, never the one before's;
 * - `replace(data)` shows an answer the page got another way (an action's): a refresh already under
 *   way, which may have been answered before the action, is dropped, and the next one comes a full
 *   interval later.
 */
export function useFollow<T>(path: string, everyMs: number, keepGoing: (data: T) => boolean): [Followed<T>, (data: T) => void] {
  const [held, setHeld] = useState<{ path: string; followed: Followed<T> }>({ path, followed: LOADING });
  const replaceRef = useRef<(data: T) => void>(() => undefined);
  useEffect(() => {
    let live = true;
    let generation = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight: AbortController | null = null;
    let following = true;
    let failures = 0;
    // What the page shows now, to tell whether an answer changes it.
    let shown: { text: string; following: boolean; problem: boolean } | null = null;
    const setFollowed = (followed: Followed<T>) => setHeld({ path, followed });
    setFollowed(LOADING);

    const show = (data: T) => {
      const text = JSON.stringify(data);
      following = keepGoing(data);
      if (shown && shown.text === text && shown.following === following && !shown.problem) return;
      shown = { text, following, problem: false };
      setFollowed({ state: 'done', data, following, problem: null });
    };
    const schedule = (ms: number) => {
      clearTimeout(timer);
      timer = following ? setTimeout(() => void poll(), ms) : undefined;
    };
    const poll = async () => {
      timer = undefined;
      if (document.hidden) return; // asked again when the tab is shown
      const mine = ++generation;
      const ctl = new AbortController();
      inFlight = ctl;
      try {
        const data = await api<T>(path, { signal: ctl.signal });
        if (!live || mine !== generation) return;
        failures = 0;
        show(data);
        schedule(everyMs);
      } catch (err) {
        if (!live || mine !== generation || aborted(err)) return;
        const error = err instanceof ApiError ? err : new ApiError(0, 'error', String(err));
        const passing = error.status === 0 || error.status === 429 || error.status >= 500;
        following = passing;
        if (shown === null) setFollowed({ state: 'error', error });
        else {
          shown = { ...shown, following, problem: true };
          setHeld((h) => (h.path === path && h.followed.state === 'done' ? { path, followed: { ...h.followed, following, problem: error } } : h));
        }
        if (passing) schedule(Math.min(60_000, everyMs * 2 ** ++failures));
      } finally {
        if (inFlight === ctl) inFlight = null;
      }
    };
    const onVisibility = () => {
      if (!document.hidden && following && timer === undefined && inFlight === null) void poll();
    };
    replaceRef.current = (data: T) => {
      if (!live) return;
      generation++;
      inFlight?.abort();
      inFlight = null;
      failures = 0;
      show(data);
      schedule(everyMs);
    };
    document.addEventListener('visibilitychange', onVisibility);
    void poll();
    return () => {
      live = false;
      clearTimeout(timer);
      inFlight?.abort();
      document.removeEventListener('visibilitychange', onVisibility);
      replaceRef.current = () => undefined;
    };
  }, [path]);
  return [held.path === path ? held.followed : LOADING, (data: T) => replaceRef.current(data)];
}

/** What a page shows instead of its data: loading, or the error with what to do next. */
export function Pending({ loaded, what }: { loaded: Loaded<unknown> | Followed<unknown>; what: string }) {
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
