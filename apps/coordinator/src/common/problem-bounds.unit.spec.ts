import { z } from 'zod';
import { DomainError } from './domain-error.js';
import { parseInput } from './parse.js';
import { boundProblem, clip, PROBLEM_LIMITS, quoteInput } from './problem-bounds.js';

const thrown = (f: () => unknown): DomainError => {
  try {
    f();
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('did not throw');
};

describe('problem bounds', () => {
  it('cuts text to its limit and says how long it was, never splitting a surrogate pair', () => {
    expect(clip('abc', 5)).toBe('abc');
    expect(clip('x'.repeat(5_000_000), 80)).toBe(`${'x'.repeat(80)}… (5000000 characters)`);
    const cut = clip(`${'a'.repeat(63)}😀tail`, 64);
    expect(cut.isWellFormed()).toBe(true);
    expect(cut.startsWith('a'.repeat(63))).toBe(true);
    expect(quoteInput('k'.repeat(1000)).length).toBeLessThan(PROBLEM_LIMITS.value + 30);
  });

  it('names a few unknown keys and counts the rest instead of echoing 300,000 of them', () => {
    const body = Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`key-${i}-${'x'.repeat(100)}`, i]));
    const err = thrown(() => parseInput(z.strictObject({ token: z.string() }), body, 'body'));
    const problem = JSON.stringify({ detail: err.message, ...err.details });
    expect(Buffer.byteLength(problem)).toBeLessThan(PROBLEM_LIMITS.bytes);
    expect(err.message).toMatch(/unknown keys "key-0-x+… \(\d+ characters\)", .* and 299998 more/);
  });

  it('lists at most 20 issues with messages of at most 200 characters, and counts them all', () => {
    const schema = z.array(z.string().refine(() => false, { message: 'm'.repeat(1000) }));
    const err = thrown(() =>
      parseInput(
        schema,
        Array.from({ length: 500 }, () => 'v'),
        'body',
      ),
    );
    const issues = err.details?.issues as { path: string[]; message: string }[];
    expect(issues).toHaveLength(PROBLEM_LIMITS.issues);
    expect(Math.max(...issues.map((i) => i.message.length))).toBeLessThanOrEqual(PROBLEM_LIMITS.message + 30);
    expect(err.details?.issues_count).toBe(500);
    expect(err.message).toMatch(/\(and 495 more\)$/);
  });

  it('cuts keys in paths to 64 characters', () => {
    const long = 'p'.repeat(10_000);
    const err = thrown(() => parseInput(z.record(z.string(), z.number()), { [long]: 'not a number' }, 'body'));
    expect(err.message.length).toBeLessThan(500);
    expect((err.details?.issues as { path: string[] }[])[0].path[0].length).toBeLessThan(PROBLEM_LIMITS.value + 30);
  });

  it('keeps any problem under 16 KiB: long lists are cut and counted, then issues dropped, then extras', () => {
    const missing = Array.from({ length: 10_000 }, (_, i) => i.toString(16).padStart(64, '0'));
    const bounded = boundProblem({ type: 't', title: 'T', status: 422, code: 'missing_blobs', detail: 'd'.repeat(100_000), missing });
    expect(Buffer.byteLength(JSON.stringify(bounded))).toBeLessThan(PROBLEM_LIMITS.bytes);
    expect(bounded.missing).toEqual(missing.slice(0, PROBLEM_LIMITS.list));
    expect((bounded as Record<string, unknown>).missing_count).toBe(10_000);
    const huge = boundProblem({
      type: 't',
      title: 'T',
      status: 422,
      code: 'c',
      detail: 'd',
      issues: Array.from({ length: 20 }, () => ({ path: ['x'.repeat(2000)], message: 'm' })),
      blob: { nested: 'y'.repeat(50_000) },
    });
    expect(Buffer.byteLength(JSON.stringify(huge))).toBeLessThan(PROBLEM_LIMITS.bytes);
    expect(huge).toEqual(expect.objectContaining({ type: 't', code: 'c', status: 422, detail: 'd' }));
  });
});
