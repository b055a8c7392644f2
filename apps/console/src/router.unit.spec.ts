import { fleetHash } from './router.js';

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
