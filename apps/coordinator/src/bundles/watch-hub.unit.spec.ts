import { WatchHub, type HeldWatch } from './watch-hub.js';

/** A watch that records how it ended. */
function watch(node: string, deadline: number, credentialId = `cred-${node}`, etag = `"${node}-1"`) {
  const ended: string[] = [];
  const w: HeldWatch = {
    node,
    credentialId,
    etag,
    deadline,
    wake: () => void ended.push('woken'),
    expire: () => void ended.push('expired'),
    drop: () => void ended.push('dropped'),
  };
  return Object.assign(w, { ended });
}

function hub(limit = 10, readHeads?: (nodes: readonly string[]) => Promise<Map<string, string | null>>) {
  const clock = { now: 0 };
  const errors: unknown[] = [];
  const h = new WatchHub(
    { limit, tickMs: 100 },
    () => clock.now,
    readHeads,
    (e) => void errors.push(e),
  );
  return { h, clock, errors };
}

describe('WatchHub', () => {
  it('expires a watch at its deadline, not before, and only once', () => {
    const { h } = hub();
    const a = watch('a', 1000);
    const b = watch('b', 2050);
    expect(h.hold(a)).toBe(true);
    expect(h.hold(b)).toBe(true);
    h.expireDue(999);
    expect(a.ended).toEqual([]);
    h.expireDue(1000);
    expect(a.ended).toEqual(['expired']);
    expect(h.size).toBe(1);
    h.expireDue(2099);
    expect(b.ended).toEqual([]);
    h.expireDue(5000);
    h.expireDue(6000);
    expect(b.ended).toEqual(['expired']);
    expect(a.ended).toEqual(['expired']);
    expect(h.size).toBe(0);
  });

  it('holds a watch whose deadline already passed until the next sweep', () => {
    const { h } = hub();
    h.expireDue(5000);
    const late = watch('a', 10);
    h.hold(late);
    expect(late.ended).toEqual([]);
    h.expireDue(5100);
    expect(late.ended).toEqual(['expired']);
  });

  it('wakes the watches of the nodes whose heads changed, and no other', () => {
    const { h } = hub();
    const a1 = watch('a', 1000);
    const a2 = watch('a', 1000, 'cred-a2');
    const b = watch('b', 1000);
    [a1, a2, b].forEach((w) => h.hold(w));
    h.apply({ kind: 'heads', keys: ['a', 'zz'] });
    expect([a1.ended, a2.ended, b.ended]).toEqual([['woken'], ['woken'], []]);
    h.expireDue(1000);
    expect([a1.ended, a2.ended, b.ended]).toEqual([['woken'], ['woken'], ['expired']]);
  });

  it('wakes the watches made with a changed credential; checkpoints wake nobody', () => {
    const { h } = hub();
    const a = watch('a', 1000);
    const b = watch('b', 1000);
    h.hold(a);
    h.hold(b);
    h.apply({ kind: 'checkpoint' });
    h.apply({ kind: 'credentials', keys: ['cred-b'] });
    expect([a.ended, b.ended]).toEqual([[], ['woken']]);
    h.apply({ kind: 'credentials', keys: '*' });
    expect(a.ended).toEqual(['woken']);
  });

  it('wakes everything on a reset', () => {
    const { h } = hub();
    const ws = ['a', 'b', 'c'].map((n) => watch(n, 1000));
    ws.forEach((w) => h.hold(w));
    h.apply({ kind: 'reset' });
    expect(ws.map((w) => w.ended)).toEqual([['woken'], ['woken'], ['woken']]);
    expect(h.size).toBe(0);
  });

  it('narrows a change of every head to the held nodes whose ETag moved, with one read', async () => {
    const reads: (readonly string[])[] = [];
    const { h } = hub(10, async (nodes) => {
      reads.push([...nodes].sort());
      return new Map([
        ['a', '"a-1"'],
        ['b', '"b-2"'],
        ['c', null],
      ]);
    });
    const ws = ['a', 'b', 'c'].map((n) => watch(n, 1000));
    ws.forEach((w) => h.hold(w));
    h.apply({ kind: 'heads', keys: '*' });
    await new Promise((r) => setImmediate(r));
    expect(reads).toEqual([['a', 'b', 'c']]);
    expect(ws.map((w) => w.ended)).toEqual([[], ['woken'], ['woken']]);
  });

  it('wakes every held watch when that read fails', async () => {
    const { h, errors } = hub(10, async () => {
      throw new Error('database down');
    });
    const a = watch('a', 1000);
    h.hold(a);
    h.apply({ kind: 'heads', keys: '*' });
    await new Promise((r) => setImmediate(r));
    expect(a.ended).toEqual(['woken']);
    expect(errors).toHaveLength(1);
  });

  it('refuses beyond its limit, and holds again once one ended', () => {
    const { h } = hub(2);
    h.hold(watch('a', 1000));
    const b = watch('b', 2000);
    h.hold(b);
    expect(h.hasRoom()).toBe(false);
    expect(h.hold(watch('c', 1000))).toBe(false);
    expect(h.release(b)).toBe(true);
    expect(h.release(b)).toBe(false);
    expect(b.ended).toEqual([]);
    expect(h.hold(watch('c', 1000))).toBe(true);
  });

  it('forgets a released watch: it is neither woken nor expired', () => {
    const { h } = hub();
    const a = watch('a', 1000);
    h.hold(a);
    h.release(a);
    h.apply({ kind: 'heads', keys: ['a'] });
    h.expireDue(2000);
    expect(a.ended).toEqual([]);
  });

  it('drops every watch on close and holds none after', () => {
    const { h } = hub();
    const ws = ['a', 'b'].map((n) => watch(n, 1000));
    ws.forEach((w) => h.hold(w));
    h.close();
    expect(ws.map((w) => w.ended)).toEqual([['dropped'], ['dropped']]);
    expect(h.hold(watch('c', 1000))).toBe(false);
    expect(h.closing).toBe(true);
  });

  it('may hold a watch again from its own wake, and keeps going when one callback throws', () => {
    const { h, errors } = hub();
    const again = watch('a', 3000);
    const first: HeldWatch = { ...watch('a', 1000), wake: () => void h.hold(again) };
    const bad: HeldWatch = {
      ...watch('a', 1000, 'cred-bad'),
      wake: () => {
        throw new Error('boom');
      },
    };
    h.hold(bad);
    h.hold(first);
    h.apply({ kind: 'heads', keys: ['a'] });
    expect(errors).toHaveLength(1);
    expect(h.size).toBe(1);
    h.expireDue(3000);
    expect(again.ended).toEqual(['expired']);
  });
});
