import { RepeatMemo } from './repeat-memo.js';

const at = (position: number, hash = `h${position}`) => ({ position, hash });

describe('RepeatMemo', () => {
  it('answers only the body it keeps, at the head it was decided at', () => {
    const memo = new RepeatMemo();
    expect(memo.knows('a')).toBe(false);
    expect(memo.answer('a', at(5))).toBeNull();
    memo.keep({ digest: 'a', at: at(5), nodes: 3 });
    expect(memo.knows('a')).toBe(true);
    expect(memo.answer('a', at(5))).toEqual({ publish_id: null, position: 5, changed: [], unchanged: 3 });
    expect(memo.answer('b', at(5))).toBeNull();
    expect(memo.answer('a', at(6))).toBeNull();
    // Same position, another chain (a restored database): not the head it was decided at.
    expect(memo.answer('a', at(5, 'other'))).toBeNull();
  });

  it('repeats a body that required a position only while the ledger is at it', () => {
    const memo = new RepeatMemo();
    memo.keep({ digest: 'a', at: at(7), nodes: 1, expectedPosition: 4 });
    expect(memo.answer('a', at(7))).toBeNull();
    memo.keep({ digest: 'b', at: at(7), nodes: 1, expectedPosition: 7 });
    expect(memo.answer('b', at(7))).toEqual({ publish_id: null, position: 7, changed: [], unchanged: 1 });
  });

  it('keeps the body decided at the later head when writes finish out of order', () => {
    const memo = new RepeatMemo();
    memo.keep({ digest: 'late', at: at(9), nodes: 1 });
    memo.keep({ digest: 'early', at: at(8), nodes: 1 });
    expect(memo.knows('early')).toBe(false);
    expect(memo.answer('late', at(9))).not.toBeNull();
    memo.keep({ digest: 'same-head', at: at(9), nodes: 2 });
    expect(memo.answer('same-head', at(9))).toMatchObject({ unchanged: 2 });
  });
});
