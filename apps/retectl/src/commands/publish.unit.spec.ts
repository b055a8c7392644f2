import { RetectlError } from '../errors.js';
import { archiveBatches, unknownLabels } from './publish.js';

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

describe('a coordinator that predates token scopes', () => {
  const refused = (issues: unknown[]) => new RetectlError('rejected', 'x', { problem: { code: 'invalid_body', detail: 'x', issues } });

  it('is told by its refusal of the labels key, as its body parser words it', () => {
    expect(unknownLabels(refused([{ path: [], message: 'unknown key "labels"' }]))).toBe(true);
    expect(unknownLabels(refused([{ path: [], message: 'unknown keys "labels", "rollout"' }]))).toBe(true);
  });

  it('is not confused with a refusal of the labels themselves, or of another key', () => {
    expect(unknownLabels(refused([{ path: ['labels', 'web-1', 'tags', '0'], message: 'must be a DNS label' }]))).toBe(false);
    expect(unknownLabels(refused([{ path: [], message: 'unknown key "rollout"' }]))).toBe(false);
    expect(
      unknownLabels(new RetectlError('forbidden', 'x', { problem: { code: 'out_of_scope', issues: [{ path: [], message: 'unknown key "labels"' }] } })),
    ).toBe(false);
  });
});
