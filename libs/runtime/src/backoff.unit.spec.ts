import { backoffDelay, upperHalfJitter } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles the base per attempt up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a, 1000, 60_000))).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('stays finite and capped for huge attempt counts, and treats a negative attempt as the first', () => {
    expect(backoffDelay(10_000, 1000, 60_000)).toBe(60_000);
    expect(backoffDelay(-3, 250, 60_000)).toBe(250);
    expect(backoffDelay(Number.NaN, 250, 60_000)).toBe(250);
  });
});

describe('upperHalfJitter', () => {
  it('draws from the upper half of the ceiling', () => {
    expect(upperHalfJitter(1000, 0)).toBe(500);
    expect(upperHalfJitter(1000, 0.5)).toBe(750);
    expect(upperHalfJitter(1000, 0.999)).toBe(999);
  });
});
