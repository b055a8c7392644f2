import { fleetHash, href, parseRoute } from './router.js';

describe('console: the fleet page URL', () => {
  it('keeps the filters the URL has now, not those the page was rendered with', () => {
    // A search for "bet" was cleared a moment ago: the URL says so before the page re-renders.
    expect(fleetHash('#/fleet', { state: 'unmanaged', cursor: '', back: '' })).toBe('#/fleet?state=unmanaged');
    expect(fleetHash('#/fleet?q=bet', { state: 'unmanaged', cursor: '', back: '' })).toBe('#/fleet?q=bet&state=unmanaged');
  });

  it('replaces what it is given and drops empty values', () => {
    expect(fleetHash('#/fleet?q=web&state=failed&cursor=abc', { q: '', cursor: '', back: '' })).toBe('#/fleet?state=failed');
  });

  it('starts from no filters when the URL is another page', () => {
    expect(fleetHash('#/nodes/web-1?from=2', { q: 'web' })).toBe('#/fleet?q=web');
  });
});

describe('console: routes', () => {
  it('reads the rollouts list with its filter, and one rollout by id or prefix', () => {
    const list = parseRoute('#/rollouts?status=paused&limit=200');
    expect(list.page).toBe('rollouts');
    expect(list.page === 'rollouts' && [list.params.get('status'), list.params.get('limit')]).toEqual(['paused', '200']);
    expect(parseRoute('#/rollouts/1a2b3c4d')).toEqual({ page: 'rollout', id: '1a2b3c4d' });
    expect(parseRoute('#/rollouts/1a2b3c4d-0000-4000-8000-000000000000/')).toEqual({ page: 'rollout', id: '1a2b3c4d-0000-4000-8000-000000000000' });
    expect(parseRoute('#/rollouts/1a2b3c4d/extra')).toEqual({ page: 'missing', path: '/rollouts/1a2b3c4d/extra' });
  });

  it('reads the overview and the read-only pages, and nothing beneath them', () => {
    for (const page of ['overview', 'tokens', 'keys', 'packages', 'help'] as const) {
      expect(parseRoute(href[page]())).toEqual({ page });
      expect(parseRoute(`${href[page]()}/x`)).toEqual({ page: 'missing', path: `/${page}/x` });
    }
  });

  it('links there and back: what href makes, parseRoute reads', () => {
    expect(href.rollouts()).toBe('#/rollouts');
    expect(href.rollouts({ status: '' })).toBe('#/rollouts');
    expect(href.rollouts({ status: 'running', limit: '200' })).toBe('#/rollouts?status=running&limit=200');
    const back = parseRoute(href.rollouts({ status: 'halted' }));
    expect(back.page === 'rollouts' && back.params.get('status')).toBe('halted');
    expect(href.rollout('a b/c')).toBe('#/rollouts/a%20b%2Fc');
    expect(parseRoute(href.rollout('a b/c'))).toEqual({ page: 'rollout', id: 'a b/c' });
  });

  it('keeps a malformed escape as typed instead of failing the whole console', () => {
    expect(parseRoute('#/rollouts/%zz')).toEqual({ page: 'rollout', id: '%zz' });
    expect(parseRoute('#/nodes/web%E0')).toEqual({ page: 'node', node: 'web%E0', params: new URLSearchParams() });
  });

  it('still reads the older pages', () => {
    expect(parseRoute('').page).toBe('fleet');
    expect(parseRoute('#/publishes/abc')).toEqual({ page: 'publish', id: 'abc' });
    expect(parseRoute('#/ledger')).toEqual({ page: 'ledger' });
  });
});
