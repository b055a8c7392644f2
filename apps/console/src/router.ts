import { useEffect, useState } from 'preact/hooks';

/**
 * Pages live in the URL's fragment (#/nodes/web-1), so every page is a link that can be shared or
 * bookmarked, the browser's back button works, and the coordinator serves one static file for all.
 */
export type Route =
  | { page: 'fleet'; params: URLSearchParams }
  | { page: 'node'; node: string; params: URLSearchParams }
  | { page: 'publishes'; params: URLSearchParams }
  | { page: 'publish'; id: string }
  | { page: 'rollouts'; params: URLSearchParams }
  | { page: 'rollout'; id: string }
  | { page: 'ledger' }
  | { page: 'overview' }
  | { page: 'tokens' }
  | { page: 'keys' }
  | { page: 'packages' }
  | { page: 'help' }
  | { page: 'missing'; path: string };

export function parseRoute(hash: string): Route {
  const [path, search = ''] = hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(search);
  const parts = path.split('/').filter(Boolean).map(decodePart);
  if (parts.length === 0 || (parts[0] === 'fleet' && parts.length === 1)) return { page: 'fleet', params };
  if (parts[0] === 'nodes' && parts.length === 2) return { page: 'node', node: parts[1], params };
  if (parts[0] === 'publishes' && parts.length === 1) return { page: 'publishes', params };
  if (parts[0] === 'publishes' && parts.length === 2) return { page: 'publish', id: parts[1] };
  if (parts[0] === 'rollouts' && parts.length === 1) return { page: 'rollouts', params };
  if (parts[0] === 'rollouts' && parts.length === 2) return { page: 'rollout', id: parts[1] };
  if (parts[0] === 'ledger' && parts.length === 1) return { page: 'ledger' };
  if (parts.length === 1 && (['overview', 'tokens', 'keys', 'packages', 'help'] as const).includes(parts[0] as never))
    return { page: parts[0] as 'overview' | 'tokens' | 'keys' | 'packages' | 'help' };
  return { page: 'missing', path };
}

/** A malformed escape (a hand-edited "%zz") is kept as typed: the page then says there is no such thing, instead of the console failing. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/**
 * The fleet page's hash after changing `next`, the other filters taken from `currentHash`, the URL
 * as it is now: a control's handler must not use the filters its page was last rendered with, since
 * a search submitted a moment before has changed the URL but may not have re-rendered the page yet.
 */
export function fleetHash(currentHash: string, next: Record<string, string>): string {
  const current = parseRoute(currentHash);
  const params = current.page === 'fleet' ? current.params : new URLSearchParams();
  return href.fleet({ q: params.get('q') ?? '', state: params.get('state') ?? '', ...next });
}

export const href = {
  fleet: (params: Record<string, string> = {}) => `#/fleet${qs(params)}`,
  node: (node: string, params: Record<string, string> = {}) => `#/nodes/${encodeURIComponent(node)}${qs(params)}`,
  publishes: () => '#/publishes',
  publish: (id: string) => `#/publishes/${encodeURIComponent(id)}`,
  /** `status` filters the list; `limit` asks for more than the newest 50. */
  rollouts: (params: { status?: string; limit?: string } = {}) => `#/rollouts${qs({ status: params.status ?? '', limit: params.limit ?? '' })}`,
  rollout: (id: string) => `#/rollouts/${encodeURIComponent(id)}`,
  ledger: () => '#/ledger',
  overview: () => '#/overview',
  tokens: () => '#/tokens',
  keys: () => '#/keys',
  packages: () => '#/packages',
  help: () => '#/help',
};

function qs(params: Record<string, string>): string {
  const p = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== ''));
  const s = p.toString();
  return s ? `?${s}` : '';
}
