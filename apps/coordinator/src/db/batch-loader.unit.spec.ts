import { BatchLoader } from './batch-loader.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A reader over `table` that records each call's keys, and lets the test decide when each call answers. */
function reader(table: Map<string, string>, hold = false) {
  const calls: string[][] = [];
  const release: (() => void)[] = [];
  const read = async (keys: readonly string[]) => {
    calls.push([...keys]);
    if (hold) await new Promise<void>((resolve) => release.push(resolve));
    if (keys.includes('boom')) throw new Error('read failed');
    return new Map(keys.filter((k) => table.has(k)).map((k) => [k, table.get(k)!]));
  };
  return { read, calls, release };
}

describe('BatchLoader', () => {
  const table = new Map(Array.from({ length: 25 }, (_, i) => [`k${i}`, `v${i}`]));

  it('reads the keys asked in one turn together, in chunks, and gives each asker its own key’s value', async () => {
    const r = reader(table);
    const loader = new BatchLoader(r.read, 10);
    // Asked out of order, one unknown key, one asked twice.
    const keys = [...Array.from({ length: 25 }, (_, i) => `k${24 - i}`), 'missing', 'k3'];
    const values = await Promise.all(keys.map((k) => loader.load(k)));
    expect(values).toEqual(keys.map((k) => table.get(k)));
    expect(values[25]).toBeUndefined();
    // 26 distinct keys: three reads of at most 10, each key read once.
    expect(r.calls.map((c) => c.length)).toEqual([10, 10, 6]);
    expect(new Set(r.calls.flat()).size).toBe(26);
    expect(loader.stats).toEqual({ reads: 3, keys: 26 });
  });

  it('starts a read only after the turn in which its keys were asked', async () => {
    const r = reader(table);
    const loader = new BatchLoader(r.read, 100);
    const first = loader.load('k1');
    expect(r.calls).toEqual([]);
    await first;
    const second = loader.load('k2');
    await Promise.resolve();
    expect(r.calls).toEqual([['k1']]);
    expect(await second).toBe('v2');
    expect(r.calls).toEqual([['k1'], ['k2']]);
  });

  it('rejects only the askers of the chunk that failed', async () => {
    const r = reader(table);
    const loader = new BatchLoader(r.read, 2);
    const results = await Promise.allSettled(['k1', 'k2', 'boom', 'k4'].map((k) => loader.load(k)));
    expect(results.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(results.slice(0, 2).map((x) => (x as PromiseFulfilledResult<string>).value)).toEqual(['v1', 'v2']);
  });

  it('reads at most `concurrency` chunks at once, the rest in order after them', async () => {
    const r = reader(table, true);
    const loader = new BatchLoader(r.read, 1, 2);
    const pending = ['k1', 'k2', 'k3', 'k4'].map((k) => loader.load(k));
    await turn();
    expect(r.calls).toEqual([['k1'], ['k2']]);
    r.release.shift()!();
    expect(await pending[0]).toBe('v1');
    await turn();
    expect(r.calls).toEqual([['k1'], ['k2'], ['k3']]);
    while (r.release.length) {
      r.release.shift()!();
      await turn();
    }
    expect(await Promise.all(pending)).toEqual(['v1', 'v2', 'v3', 'v4']);
  });
});
