import { formatCounts, formatPublishNodes, waitVerdict } from './publish-status.js';
import { countsReporter, waitLine } from './publish-wait.js';

const counts = { applied: 0, outstanding: 0, failed: 0, reverted: 0, superseded: 0 };

describe('waiting for a publish', () => {
  it('goes on while a node is outstanding and the deadline has not passed', () => {
    expect(waitVerdict({ ...counts, applied: 2, outstanding: 1 }, false)).toEqual({ done: false });
    expect(waitVerdict({ ...counts, failed: 1, outstanding: 1 }, false)).toEqual({ done: false });
  });

  it('exits 0 when every node applied it or a later version reached it first', () => {
    expect(waitVerdict({ ...counts, applied: 3, superseded: 1 }, false)).toEqual({ done: true, exit: 0, timedOut: false });
    expect(waitVerdict(counts, false)).toEqual({ done: true, exit: 0, timedOut: false });
  });

  it('exits 1 when any node failed, whether or not the rest reported in time', () => {
    expect(waitVerdict({ ...counts, applied: 2, failed: 1 }, false)).toEqual({ done: true, exit: 1, timedOut: false });
    expect(waitVerdict({ ...counts, failed: 1, outstanding: 2 }, true)).toEqual({ done: true, exit: 1, timedOut: true });
  });

  it('exits 1 when a node reverted the publish on its own', () => {
    expect(waitVerdict({ ...counts, applied: 2, reverted: 1 }, false)).toEqual({ done: true, exit: 1, timedOut: false });
  });

  it('exits 4 at the deadline with nodes still outstanding and none failed', () => {
    expect(waitVerdict({ ...counts, applied: 2, outstanding: 1 }, true)).toEqual({ done: true, exit: 4, timedOut: true });
  });
});

describe('publish status output', () => {
  it('counts every status', () => {
    expect(formatCounts({ applied: 2, outstanding: 1, failed: 1, reverted: 1, superseded: 0 })).toBe(
      '2 applied, 1 outstanding, 1 failed, 1 reverted, 0 superseded',
    );
  });

  it('lists each node with its status, contact and reason on one line', () => {
    const text = formatPublishNodes(
      [
        { node: 'alpha', from: 0, to: 1, status: 'applied', reason: null, ineligible: false, last_contact: '2026-01-01T00:00:00Z', activation: null },
        {
          node: 'gamma',
          from: 1,
          to: 2,
          status: 'failed',
          reason: 'exit 5:\nunit not found\n',
          ineligible: true,
          last_contact: '2026-01-01T00:00:00Z',
          activation: null,
        },
        { node: 'laptop', from: 0, to: 1, status: 'outstanding', reason: null, ineligible: false, last_contact: null, activation: null },
      ],
      () => '3s',
    );
    expect(text.split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
      ['NODE', 'VERSION', 'STATUS', 'LAST CONTACT', 'REASON'],
      ['alpha', '0 -> 1', 'applied', '3s ago', '-'],
      ['gamma', '1 -> 2', 'failed (ineligible)', '3s ago', 'exit 5: unit not found'],
      ['laptop', '0 -> 1', 'outstanding', 'never', '-'],
      [''],
    ]);
  });
});

describe('the live counts of publish --wait', () => {
  const counts = (applied: number, outstanding: number, failed = 0) => ({ applied, outstanding, failed, reverted: 0, superseded: 0 });
  const sink = (isTTY: boolean) => {
    const written: string[] = [];
    return { isTTY, written, write: (t: string) => written.push(t) };
  };

  it('reads as the elapsed time and the counts', () => {
    expect(waitLine(counts(2, 1, 1), 12.7)).toBe('waiting 12s: 2 applied, 1 outstanding, 1 failed, 0 reverted, 0 superseded');
  });

  it('rewrites one line in place on a terminal, and ends it when done', () => {
    const s = sink(true);
    const r = countsReporter(s);
    r.update(counts(0, 3), 1);
    r.update(counts(0, 3), 2);
    r.update(counts(3, 0), 3);
    r.done();
    expect(s.written).toEqual([
      '\r\u001b[Kwaiting 1s: 0 applied, 3 outstanding, 0 failed, 0 reverted, 0 superseded',
      '\r\u001b[Kwaiting 2s: 0 applied, 3 outstanding, 0 failed, 0 reverted, 0 superseded',
      '\r\u001b[Kwaiting 3s: 3 applied, 0 outstanding, 0 failed, 0 reverted, 0 superseded',
      '\n',
    ]);
  });

  it('otherwise writes a line only when the counts change', () => {
    const s = sink(false);
    const r = countsReporter(s);
    for (let i = 0; i < 5; i++) r.update(counts(0, 3), i);
    r.update(counts(1, 2), 5);
    r.update(counts(1, 2), 6);
    r.update(counts(2, 0, 1), 7);
    r.done();
    expect(s.written).toEqual([
      'waiting 0s: 0 applied, 3 outstanding, 0 failed, 0 reverted, 0 superseded\n',
      'waiting 5s: 1 applied, 2 outstanding, 0 failed, 0 reverted, 0 superseded\n',
      'waiting 7s: 2 applied, 0 outstanding, 1 failed, 0 reverted, 0 superseded\n',
    ]);
  });
});
