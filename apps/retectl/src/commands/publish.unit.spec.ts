import { archiveBatches } from './publish.js';

describe('archiveBatches', () => {
  it('keeps the order, and cuts a new archive past 20,000 blobs or about 64 MiB', () => {
    const small = new Map(Array.from({ length: 45_000 }, (_, i) => [`d${i}`, new Uint8Array(10)]));
    const batches = archiveBatches([...small.keys()], small);
    expect(batches.map((b) => b.length)).toEqual([20_000, 20_000, 5_000]);
    expect(batches.flat()).toEqual([...small.keys()]);
    const big = new Map(Array.from({ length: 5 }, (_, i) => [`b${i}`, new Uint8Array(30 * 1024 * 1024)]));
    expect(archiveBatches([...big.keys()], big).map((b) => b.length)).toEqual([2, 2, 1]);
  });

  it('sends nothing for nothing missing', () => {
    expect(archiveBatches([], new Map())).toEqual([]);
  });
});
