import { createTwoFilesPatch } from 'diff';
import { sideBySide } from './side-by-side.js';

const patch = (a: string, b: string) => createTwoFilesPatch('n/v1/flor.json', 'n/v2/flor.json', a, b, undefined, undefined, { context: 1 });

describe('console: unified diff side by side', () => {
  it('pairs an edited line with its replacement and keeps both line numbers', () => {
    const rows = sideBySide(patch('a\nb\nc\nd\n', 'a\nB\nc\nd\n'));
    expect(rows).toEqual([
      { kind: 'hunk', header: '@@ -1,3 +1,3 @@' },
      { kind: 'same', left: { line: 1, text: 'a' }, right: { line: 1, text: 'a' } },
      { kind: 'changed', left: { line: 2, text: 'b' }, right: { line: 2, text: 'B' } },
      { kind: 'same', left: { line: 3, text: 'c' }, right: { line: 3, text: 'c' } },
    ]);
  });

  it('pads the shorter side of a run, and numbers lines after an insertion on each side', () => {
    const rows = sideBySide(patch('x\ny\n', 'x\nn1\nn2\ny\n'));
    expect(rows.filter((r) => r.kind !== 'hunk')).toEqual([
      { kind: 'same', left: { line: 1, text: 'x' }, right: { line: 1, text: 'x' } },
      { kind: 'changed', left: null, right: { line: 2, text: 'n1' } },
      { kind: 'changed', left: null, right: { line: 3, text: 'n2' } },
      { kind: 'same', left: { line: 2, text: 'y' }, right: { line: 4, text: 'y' } },
    ]);
  });

  it('shows an added file entirely on the right, and ignores the no-newline marker', () => {
    const rows = sideBySide(patch('', 'only\nlines'));
    expect(rows.filter((r) => r.kind !== 'hunk')).toEqual([
      { kind: 'changed', left: null, right: { line: 1, text: 'only' } },
      { kind: 'changed', left: null, right: { line: 2, text: 'lines' } },
    ]);
  });

  it('starts a new pairing at each hunk', () => {
    const a = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n') + '\n';
    const b = a.replace('l2\n', 'L2\n').replace('l17\n', 'L17\n');
    const rows = sideBySide(patch(a, b));
    expect(rows.filter((r) => r.kind === 'hunk')).toHaveLength(2);
    expect(rows.filter((r) => r.kind === 'changed')).toEqual([
      { kind: 'changed', left: { line: 3, text: 'l2' }, right: { line: 3, text: 'L2' } },
      { kind: 'changed', left: { line: 18, text: 'l17' }, right: { line: 18, text: 'L17' } },
    ]);
  });
});
