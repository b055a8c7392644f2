import { eachInFlight } from './in-flight.js';

/** A call that stays in flight until the test lets it go. */
function gate() {
  const calls: { item: number; release: (fail?: Error) => void }[] = [];
  let inFlight = 0;
  let most = 0;
  const fn = (item: number) =>
    new Promise<number>((resolve, reject) => {
      inFlight++;
      most = Math.max(most, inFlight);
      calls.push({
        item,
        release: (fail) => {
          inFlight--;
          if (fail) reject(fail);
          else resolve(item * 10);
        },
      });
    });
  return { fn, calls, inFlight: () => inFlight, most: () => most };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('eachInFlight', () => {
  it('keeps at most the limit in flight and answers in the items’ order, whatever order the calls end in', async () => {
    const g = gate();
    const done = eachInFlight([1, 2, 3, 4, 5], 2, g.fn);
    await turn();
    expect(g.calls.map((c) => c.item)).toEqual([1, 2]);
    g.calls[1].release();
    await turn();
    expect(g.calls.map((c) => c.item)).toEqual([1, 2, 3]);
    g.calls[0].release();
    await turn();
    g.calls[2].release();
    await turn();
    for (const c of g.calls.slice(3)) c.release();
    await turn();
    for (const c of g.calls.slice(5)) c.release();
    expect(await done).toEqual([10, 20, 30, 40, 50]);
    expect(g.most()).toBe(2);
  });

  it('starts nothing after a failure, waits for the calls in flight, then throws the first failure', async () => {
    const g = gate();
    let settled = false;
    const done = eachInFlight([1, 2, 3, 4], 2, g.fn).finally(() => (settled = true));
    await turn();
    g.calls[0].release(new Error('first'));
    await turn();
    expect(g.calls.map((c) => c.item)).toEqual([1, 2]);
    expect(settled).toBe(false);
    g.calls[1].release(new Error('second'));
    await expect(done).rejects.toThrow('first');
    expect(g.calls.map((c) => c.item)).toEqual([1, 2]);
    expect(g.inFlight()).toBe(0);
  });

  it('runs one at a time with a limit of one, nothing for no items, and refuses a limit below one', async () => {
    const order: string[] = [];
    const fn = async (item: string) => {
      order.push(`start ${item}`);
      await turn();
      order.push(`end ${item}`);
      return item;
    };
    expect(await eachInFlight(['a', 'b'], 1, fn)).toEqual(['a', 'b']);
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b']);
    expect(await eachInFlight([], 3, fn)).toEqual([]);
    await expect(eachInFlight(['a'], 0, fn)).rejects.toThrow('at most 0 calls in flight: expected a whole number of at least 1');
  });
});
