import type { RolloutView } from '#contracts';
import { watchLine } from './commands/rollout.js';
import { liveLine } from './live-line.js';

const sink = (isTTY: boolean) => {
  const written: string[] = [];
  return { isTTY, written, write: (t: string) => written.push(t) };
};

describe('liveLine', () => {
  it('on a terminal rewrites one line at every update and ends it once', () => {
    const s = sink(true);
    const l = liveLine(s);
    l.update('1s: a', 'a');
    l.update('2s: a', 'a');
    l.done();
    l.done();
    expect(s.written).toEqual(['\r\u001b[K1s: a', '\r\u001b[K2s: a', '\n']);
  });

  it('elsewhere writes a line only when the state changes, and nothing to end', () => {
    const s = sink(false);
    const l = liveLine(s);
    l.update('1s: a', 'a');
    l.update('2s: a', 'a');
    l.update('3s: b', 'b');
    l.done();
    expect(s.written).toEqual(['1s: a\n', '3s: b\n']);
  });
});

describe('watchLine', () => {
  const wave = (name: string, released: boolean, counts: Partial<RolloutView['wave_list'][number]['counts']>) => ({
    index: 0,
    name,
    released_at: released ? '2026-12-01T10:00:00.000Z' : null,
    bakes_until: null,
    counts: { nodes: 5, released: 5, confirmed: 0, provisional: 0, failed: 0, outstanding: 0, expired: 0, ...counts },
  });
  const view = (status: RolloutView['status'], waves: RolloutView['wave_list']) =>
    ({ status, released: waves.filter((w) => w.released_at).length, waves: waves.length, wave_list: waves }) as unknown as RolloutView;

  it('names the state, the current wave and each released wave with only the counts that are not zero', () => {
    const line = watchLine(
      view('running', [
        wave('canary', true, { released: 1, confirmed: 1 }),
        wave('wave 1', true, { confirmed: 2, provisional: 1, outstanding: 1, expired: 1 }),
        wave('wave 2', false, {}),
      ]),
    );
    expect(line).toBe('running wave 2/3: canary 1/1 confirmed; wave 1 2/5 confirmed, 1 provisional, 1 outstanding, 1 unconfirmed');
  });

  it('shows a halt with its failures, and a rollout with nothing released yet', () => {
    expect(watchLine(view('halted', [wave('canary', true, { released: 2, failed: 2 }), wave('wave 1', false, {})]))).toBe(
      'halted wave 1/2: canary 0/2 confirmed, 2 failed',
    );
    expect(watchLine(view('paused', [wave('wave 1', false, {})]))).toBe('paused wave 0/1');
  });
});
