import { dryRunResult } from './dry-run.js';

describe('dry run', () => {
  it('would apply a newer version, or finish one whose apply did not complete, and says up to date otherwise', () => {
    expect(dryRunResult(3, 2, true)).toBe('would_apply');
    expect(dryRunResult(2, 2, true)).toBe('up_to_date');
    expect(dryRunResult(2, 2, false)).toBe('would_apply');
    expect(dryRunResult(null, 2, true)).toBe('up_to_date');
    expect(dryRunResult(null, 2, false)).toBe('would_apply');
    expect(dryRunResult(null, 0, false)).toBe('up_to_date');
  });
});
