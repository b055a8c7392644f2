import type { Change, ChangeFeed } from '../db/index.js';
import { parseChange } from '../db/change-feed.js';
import { confirmHeader, ifNoneMatchTags, PollCache, type PollRow } from './poll-cache.js';

/** A feed whose trust the test sets and whose changes it sends. */
function feed() {
  const subscribers: ((c: Change) => void)[] = [];
  const f = { trust: true, send: (c: Change) => subscribers.forEach((s) => s(c)) };
  const api: ChangeFeed = { subscribe: (s) => void subscribers.push(s), trusted: () => f.trust, settle: async () => undefined, close: async () => undefined };
  return Object.assign(f, { api });
}

const row: PollRow = {
  node: 'alpha',
  secret_hash: 'h',
  revoked_at: null,
  revoked_reason: null,
  version: 3,
  retired: false,
  etag: '"e3"',
  checkpoint: 'note',
  tree_note: 'tree note',
  confirm_within: null,
  confirmed_by: null,
};
const ok = (h: string) => h === 'h';

describe('PollCache', () => {
  it('answers a 304 only for a remembered live credential of the node with a matching ETag', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    cache.remember(cache.mark(), 'c1', row);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toEqual({
      etag: '"e3"',
      checkpoint: Buffer.from('note').toString('base64'),
      confirm: null,
      tree: 'tree note',
    });
    expect(cache.notModified('c1', 'alpha', ['*'], ok)).toEqual({
      etag: '"e3"',
      checkpoint: Buffer.from('note').toString('base64'),
      confirm: null,
      tree: 'tree note',
    });
    expect(cache.notModified('c1', 'alpha', ['"e2"'], ok)).toBeNull();
    expect(cache.notModified('c1', 'beta', ['"e3"'], ok)).toBeNull();
    expect(cache.notModified('c1', 'alpha', ['"e3"'], () => false)).toBeNull();
    cache.remember(cache.mark(), 'c2', { ...row, revoked_at: new Date() });
    expect(cache.notModified('c2', 'alpha', ['"e3"'], ok)).toBeNull();
  });

  it('forgets what a change names, and keeps no part of a row that a change to that part overtook', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    const hit = () => cache.notModified('c1', 'alpha', ['"e3"'], ok);
    cache.remember(cache.mark(), 'c1', row);
    f.send(parseChange('h:beta,alpha')!);
    expect(hit()).toBeNull();
    // Read before a change to its credential, its head, or the checkpoint: that part is not kept.
    for (const change of ['c:c1', 'h:alpha', 'k', 'c:*', 'h:*']) {
      cache.remember(cache.mark(), 'c1', row);
      expect(hit()).not.toBeNull();
      f.send(parseChange(change)!);
      const mark = cache.mark();
      f.send(parseChange(change)!);
      cache.remember(mark, 'c1', row);
      expect({ change, hit: hit() }).toEqual({ change, hit: null });
    }
    // A change to other keys does not hold back this row's: it is kept whole.
    const mark = cache.mark();
    f.send(parseChange('h:beta,gamma')!);
    f.send(parseChange('c:other')!);
    cache.remember(mark, 'c1', row);
    expect(hit()).toEqual({ etag: '"e3"', checkpoint: Buffer.from('note').toString('base64'), confirm: null, tree: 'tree note' });
    // A reset forgets everything, and keeps nothing read before it.
    const beforeReset = cache.mark();
    f.send({ kind: 'reset' });
    expect(cache.size).toEqual({ credentials: 0, heads: 0 });
    cache.remember(beforeReset, 'c1', row);
    expect(cache.size).toEqual({ credentials: 0, heads: 0 });
  });

  it('says whether a watch read at a mark may have missed a change of its credential or its node', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    const mark = cache.mark();
    f.send(parseChange('h:beta')!);
    f.send(parseChange('c:other')!);
    f.send(parseChange('k')!);
    expect(cache.changedSince(mark, 'c1', 'alpha')).toBe(false);
    expect(cache.changedSince(mark, 'c1', 'beta')).toBe(true);
    expect(cache.changedSince(mark, 'other', 'alpha')).toBe(true);
    const later = cache.mark();
    f.send(parseChange('h:*')!);
    expect(cache.changedSince(later, 'c1', 'alpha')).toBe(true);
    const last = cache.mark();
    f.send({ kind: 'reset' });
    expect(cache.changedSince(last, 'c1', 'alpha')).toBe(true);
    expect(cache.changedSince(cache.mark(), 'c1', 'alpha')).toBe(false);
  });

  it('records changes key by key within bounds: past them a read begun before keeps nothing', () => {
    const f = feed();
    const clock = { now: 0 };
    const cache = new PollCache(f.api, () => clock.now);
    const hit = () => cache.notModified('c1', 'alpha', ['"e3"'], ok);
    // Too many keys recorded: the next change clears the records, and a read marked before keeps nothing.
    let mark = cache.mark();
    f.send({ kind: 'heads', keys: Array.from({ length: 50_001 }, (_, i) => `n${i}`) });
    f.send(parseChange('h:beta')!);
    cache.remember(mark, 'c1', row);
    expect(cache.size).toEqual({ credentials: 0, heads: 0 });
    // A read marked after the clearing is judged key by key again.
    mark = cache.mark();
    f.send(parseChange('h:gamma')!);
    cache.remember(mark, 'c1', row);
    expect(hit()).not.toBeNull();
    // Records older than 30 s are cleared the same way.
    f.send({ kind: 'reset' });
    mark = cache.mark();
    f.send(parseChange('h:beta')!);
    clock.now += 30_001;
    f.send(parseChange('h:gamma')!);
    cache.remember(mark, 'c1', row);
    expect(cache.size).toEqual({ credentials: 0, heads: 0 });
  });

  it('answers nothing from memory while the feed is not trusted', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    cache.remember(cache.mark(), 'c1', row);
    f.trust = false;
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    f.trust = true;
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).not.toBeNull();
  });

  it('reads If-None-Match as the database query does', () => {
    expect(ifNoneMatchTags(undefined)).toEqual([]);
    expect(ifNoneMatchTags(' W/"a" , "b",, ')).toEqual(['"a"', '"b"']);
    // One tag: the same rule without a list.
    for (const [header, tags] of [
      ['"a"', ['"a"']],
      [' W/"a" ', ['"a"']],
      ['*', ['*']],
      ['   ', []],
      ['W/', []],
      ['W/W/"a"', ['W/"a"']],
    ] as const)
      expect(ifNoneMatchTags(header)).toEqual(tags);
    expect(ifNoneMatchTags(Array.from({ length: 20 }, (_, i) => `"${i}"`).join(','))).toHaveLength(16);
    expect(parseChange('p:florete-cache:1:ab:3')).toBeNull();
    expect(parseChange('h:*')).toEqual({ kind: 'heads', keys: '*' });
  });
});

describe('confirmHeader', () => {
  it('says the window of a head under operator confirmation, and who confirmed it, URI-encoded; nothing otherwise', () => {
    expect(confirmHeader({ version: 7, confirm_within: null, confirmed_by: null })).toBeNull();
    expect(confirmHeader({ version: 7, confirm_within: 600, confirmed_by: null })).toBe('version=7; within=600');
    expect(confirmHeader({ version: 7, confirm_within: 600, confirmed_by: 'ops; alice' })).toBe('version=7; within=600; by=ops%3B%20alice');
  });
});
