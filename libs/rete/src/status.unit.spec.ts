import { formatAge, formatTable, nodeState } from './status.js';

const now = new Date('2026-01-02T03:04:05Z');
const node = { version: 3, retired: false, applied_version: 3, last_contact: '2026-01-02T03:00:00Z', last_result: 'applied' };

describe('status', () => {
  it('derives the state from what the node last said, without any age threshold', () => {
    expect(nodeState(node)).toBe('in sync');
    expect(nodeState({ ...node, applied_version: 2, last_contact: '2020-01-01T00:00:00Z' })).toBe('pending');
    expect(nodeState({ ...node, last_result: 'failed' })).toBe('failed');
    expect(nodeState({ ...node, last_contact: null, applied_version: null })).toBe('never seen');
    expect(nodeState({ ...node, retired: true })).toBe('retired');
    expect(nodeState({ ...node, version: null, state: 'unenrolled' })).toBe('not published');
  });

  it('formats ages coarsely', () => {
    const ago = (s: number) => formatAge(new Date(now.getTime() - s * 1000).toISOString(), now);
    expect([ago(0), ago(59), ago(60), ago(3599), ago(3600), ago(3660), ago(86400 + 7200), formatAge(null, now)]).toEqual(['0s', '59s', '1m', '59m', '1h', '1h1m', '1d2h', 'never']);
  });

  it('pads table columns to the widest cell', () => {
    expect(formatTable(['NODE', 'V'], [['alpha', '1'], ['b', '10']])).toBe('NODE   V\nalpha  1\nb      10\n');
  });
});
