import { largeWorkBegun, memoryReleases, releaseMemorySoon } from './memory-release.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('releaseMemorySoon', () => {
  it('collects once the large work has been over for the quiet time, once for work that came in a burst', async () => {
    const before = memoryReleases();
    for (let i = 0; i < 5; i++) {
      releaseMemorySoon(100);
      await sleep(20);
    }
    expect(memoryReleases()).toBe(before);
    await sleep(250);
    expect(memoryReleases()).toBe(before + 1);
  });

  it('waits for large work under way, however long it takes, then for the quiet time after it', async () => {
    const before = memoryReleases();
    // The quiet time after earlier work runs out while the next large work is under way.
    releaseMemorySoon(30);
    const first = largeWorkBegun(30);
    await sleep(120);
    expect(memoryReleases()).toBe(before);
    // Large work ending inside other large work (a mirror commit during a publish) starts no collection.
    const second = largeWorkBegun(30);
    releaseMemorySoon(30);
    first();
    first();
    await sleep(120);
    expect(memoryReleases()).toBe(before);
    second();
    await sleep(10);
    expect(memoryReleases()).toBe(before);
    await sleep(120);
    expect(memoryReleases()).toBe(before + 1);
  });

  it('work that turned out small asks for no collection of its own, but one it held off or that came due during it runs after it', async () => {
    const before = memoryReleases();
    largeWorkBegun(20)(false);
    await sleep(80);
    expect(memoryReleases()).toBe(before);
    // Held off: the quiet time of earlier work was running when the small work began.
    releaseMemorySoon(20);
    const small = largeWorkBegun(20);
    await sleep(80);
    expect(memoryReleases()).toBe(before);
    small(false);
    await sleep(80);
    expect(memoryReleases()).toBe(before + 1);
    // Came due: large work ended inside the small one, and its quiet time ran out before the small one ended.
    const outer = largeWorkBegun(20);
    largeWorkBegun(20)();
    await sleep(80);
    expect(memoryReleases()).toBe(before + 1);
    outer(false);
    await sleep(80);
    expect(memoryReleases()).toBe(before + 2);
  });

  it('gives back pages the heap no longer uses', async () => {
    let garbage: number[][] | null = Array.from({ length: 200 }, () => Array.from({ length: 50_000 }, (_, i) => i + 0.5));
    expect(garbage.length).toBe(200);
    const grown = process.memoryUsage().heapTotal;
    garbage = null;
    releaseMemorySoon(10);
    await sleep(100);
    expect(process.memoryUsage().heapTotal).toBeLessThan(grown - 40 * 1024 * 1024);
  });
});
