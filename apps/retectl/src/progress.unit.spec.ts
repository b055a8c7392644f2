import { lateProgress, renderProgress } from './progress.js';

describe('progress bar', () => {
  it('fills in proportion to the work done', () => {
    expect(renderProgress('uploading', 0, 40, 10)).toBe('uploading [----------]  0/40');
    expect(renderProgress('uploading', 20, 40, 10)).toBe('uploading [#####-----] 20/40');
    expect(renderProgress('uploading', 40, 40, 10)).toBe('uploading [##########] 40/40');
  });
});

describe('a progress bar for work that is usually quick', () => {
  const terminal = (isTTY: boolean) => {
    const written: string[] = [];
    return { written, stream: { isTTY, write: (s: string) => written.push(s) > 0 } as unknown as NodeJS.WriteStream };
  };

  it('stays silent for the first second, then draws, at most every 100 ms, and clears its line at the end', () => {
    let now = 0;
    const { written, stream } = terminal(true);
    const bar = lateProgress(1000, stream, () => now);
    bar.stage('writing', 3);
    bar.tick();
    now = 999;
    bar.tick();
    expect(written).toEqual([]);
    now = 1000;
    bar.tick();
    now = 1050;
    bar.stage('parsing', 10);
    bar.tick();
    now = 1160;
    bar.tick();
    bar.done();
    expect(written.map((w) => w.replace(/\[[#-]+\] /, ''))).toEqual([
      '\r\u001b[Kwriting 3/3',
      '\r\u001b[Kparsing  0/10',
      '\r\u001b[Kparsing  2/10',
      '\r\u001b[K',
    ]);
  });

  it('clears its line for what is printed between stages, and draws again at the next stage', () => {
    let now = 0;
    const { written, stream } = terminal(true);
    const bar = lateProgress(1000, stream, () => now);
    now = 2000;
    bar.stage('parsing', 1);
    bar.done();
    bar.done();
    now = 2500;
    bar.stage('compiling', 2);
    bar.done();
    expect(written.map((w) => w.replace(/\[[#-]+\] /, ''))).toEqual(['\r\u001b[Kparsing 0/1', '\r\u001b[K', '\r\u001b[Kcompiling 0/2', '\r\u001b[K']);
  });

  it('writes nothing when stderr is not a terminal, however long the work takes', () => {
    let now = 0;
    const { written, stream } = terminal(false);
    const bar = lateProgress(1000, stream, () => now);
    bar.stage('writing', 1);
    now = 5000;
    bar.tick();
    bar.done();
    expect(written).toEqual([]);
  });

  it('leaves the line alone at the end when it never drew', () => {
    const { written, stream } = terminal(true);
    const bar = lateProgress(1000, stream, () => 0);
    bar.stage('writing', 1);
    bar.tick();
    bar.done();
    expect(written).toEqual([]);
  });
});
