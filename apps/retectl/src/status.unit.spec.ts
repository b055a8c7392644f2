import { formatAge, formatSeconds, formatTable, nodeState } from './status.js';

const now = new Date('2026-01-02T03:04:05Z');
const node = { state: 'enrolled', convergence: 'converged', ineligible: false };

describe('status', () => {
  it('names the lifecycle state, then the convergence, then ineligibility', () => {
    expect(nodeState(node)).toBe('enrolled, converged');
    expect(nodeState({ ...node, convergence: 'outstanding' })).toBe('enrolled, outstanding');
    expect(nodeState({ ...node, convergence: 'failed', ineligible: true })).toBe('enrolled, failed, ineligible');
    expect(nodeState({ ...node, state: 'retired', convergence: 'outstanding' })).toBe('retired, outstanding');
    expect(nodeState({ ...node, state: 'retired', convergence: 'converged' })).toBe('retired, converged');
  });

  it('leaves out the convergence of a node no agent manages: it could not have acted yet', () => {
    // The word the API and `status --json` use: scripts filter on it, so the table says it too.
    expect(nodeState({ ...node, state: 'unmanaged', convergence: 'outstanding' })).toBe('unmanaged');
    expect(nodeState({ ...node, state: 'unmanaged', convergence: null, ineligible: true })).toBe('unmanaged, ineligible');
  });

  it('formats ages coarsely', () => {
    const ago = (s: number) => formatAge(new Date(now.getTime() - s * 1000).toISOString(), now);
    expect([ago(0), ago(59), ago(60), ago(3599), ago(3600), ago(3660), ago(86400 + 7200), formatAge(null, now)]).toEqual([
      '0s',
      '59s',
      '1m',
      '59m',
      '1h',
      '1h1m',
      '1d2h',
      'never',
    ]);
    expect([formatSeconds(0), formatSeconds(3660), formatSeconds(-5)]).toEqual(['0s', '1h1m', '0s']);
  });

  it('pads table columns to the widest cell', () => {
    expect(
      formatTable(
        ['NODE', 'V'],
        [
          ['alpha', '1'],
          ['b', '10'],
        ],
      ),
    ).toBe('NODE   V\nalpha  1\nb      10\n');
  });
});
