import { confirmsRetirement, reportedOutcome } from './report.rules.js';

describe('report rules', () => {
  describe('the outcome a report records', () => {
    it('pins applied and up_to_date on the version that runs; only applied overwrites any other outcome', () => {
      expect(reportedOutcome({ result: 'applied', active_version: 4 })).toEqual({ version: 4, result: 'applied', error: null, overwrites: true });
      expect(reportedOutcome({ result: 'up_to_date', active_version: 4, target_version: 9 })).toEqual({
        version: 4,
        result: 'applied',
        error: null,
        overwrites: 'rejected',
      });
    });

    it('pins a failure on the version that was tried, with its reason', () => {
      expect(reportedOutcome({ result: 'failed', active_version: 3, target_version: 4, error: 'exit 3' })).toEqual({
        version: 4,
        result: 'failed',
        error: 'exit 3',
        overwrites: true,
      });
      expect(reportedOutcome({ result: 'rejected', active_version: 3, target_version: 5, error: 'bad digest' })).toMatchObject({
        version: 5,
        result: 'rejected',
      });
    });

    it('pins a refusal of the version running (another set under its number) on that version; up_to_date ends only a refusal', () => {
      expect(reportedOutcome({ result: 'rejected', active_version: 4, target_version: 4, error: 'version 4: version_conflict' })).toEqual({
        version: 4,
        result: 'rejected',
        error: 'version 4: version_conflict',
        overwrites: true,
      });
      expect(reportedOutcome({ result: 'up_to_date', active_version: 4 })?.overwrites).toBe('rejected');
      expect(reportedOutcome({ result: 'up_to_date', active_version: 4, confirmation: 'confirmed' })?.overwrites).toBe(true);
    });

    it('records nothing for a failure that names no version, nor for a node that runs none', () => {
      expect(reportedOutcome({ result: 'failed', active_version: 3, error: 'replayed bundle' })).toBeNull();
      expect(reportedOutcome({ result: 'up_to_date', active_version: 0 })).toBeNull();
    });
  });

  describe('retirement confirmed', () => {
    const retired = { version: 7, retired: true };

    it('is a node running its retired head version', () => {
      expect(confirmsRetirement(retired, { result: 'applied', active_version: 7 })).toBe(true);
      expect(confirmsRetirement(retired, { result: 'up_to_date', active_version: 7 })).toBe(true);
    });

    it('is not a failed retirement, an older version, a live head or a node never published', () => {
      expect(confirmsRetirement(retired, { result: 'failed', active_version: 7 })).toBe(false);
      expect(confirmsRetirement(retired, { result: 'applied', active_version: 6 })).toBe(false);
      expect(confirmsRetirement({ version: 7, retired: false }, { result: 'applied', active_version: 7 })).toBe(false);
      expect(confirmsRetirement(undefined, { result: 'applied', active_version: 7 })).toBe(false);
    });
  });
});
