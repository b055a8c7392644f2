import type { Change, ChangeFeed } from '../db/change-feed.js';
import { parseChange } from '../db/change-feed.js';
import { ifNoneMatchTags, PollCache, type PollRow } from './poll-cache.js';

/** A feed whose trust the test sets and whose changes it sends. */
function feed() {
  const subscribers: ((c: Change) => void)[] = [];
  const f = { trust: true, send: (c: Change) => subscribers.forEach((s) => s(c)) };
  const api: ChangeFeed = { subscribe: (s) => void subscribers.push(s), trusted: () => f.trust, settle: async () => undefined, close: async () => undefined };
  return Object.assign(f, { api });
}

const row: PollRow = { node: 'alpha', secret_hash: 'h', revoked_at: null, revoked_reason: null, version: 3, retired: false, etag: '"e3"', checkpoint: 'note' };
const ok = (h: string) => h === 'h';

describe('PollCache', () => {
  it('answers a 304 only for a remembered live credential of the node with a matching ETag', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    cache.remember(cache.mark(), 'c1', row);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toEqual({ etag: '"e3"', checkpoint: Buffer.from('note').toString('base64') });
    expect(cache.notModified('c1', 'alpha', ['*'], ok)).toEqual({ etag: '"e3"', checkpoint: Buffer.from('note').toString('base64') });
    expect(cache.notModified('c1', 'alpha', ['"e2"'], ok)).toBeNull();
    expect(cache.notModified('c1', 'beta', ['"e3"'], ok)).toBeNull();
    expect(cache.notModified('c1', 'alpha', ['"e3"'], () => false)).toBeNull();
    cache.remember(cache.mark(), 'c2', { ...row, revoked_at: new Date() });
    expect(cache.notModified('c2', 'alpha', ['"e3"'], ok)).toBeNull();
  });

  it('forgets what a change names, and keeps no row a change overtook', () => {
    const f = feed();
    const cache = new PollCache(f.api);
    cache.remember(cache.mark(), 'c1', row);
    f.send(parseChange('h:beta,alpha')!);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    const mark = cache.mark();
    f.send(parseChange('c:other')!);
    cache.remember(mark, 'c1', row); // read before the change: not kept
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    cache.remember(cache.mark(), 'c1', row);
    f.send(parseChange('k')!);
    expect(cache.notModified('c1', 'alpha', ['"e3"'], ok)).toBeNull();
    cache.remember(cache.mark(), 'c1', row);
    f.send({ kind: 'reset' });
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
    expect(ifNoneMatchTags(Array.from({ length: 20 }, (_, i) => `"${i}"`).join(','))).toHaveLength(16);
    expect(parseChange('p:florete-cache:1:ab:3')).toBeNull();
    expect(parseChange('h:*')).toEqual({ kind: 'heads', keys: '*' });
  });
});
