import { renderProgress } from './progress.js';

describe('progress bar', () => {
  it('fills in proportion to the work done', () => {
    expect(renderProgress('uploading', 0, 40, 10)).toBe('uploading [----------]  0/40');
    expect(renderProgress('uploading', 20, 40, 10)).toBe('uploading [#####-----] 20/40');
    expect(renderProgress('uploading', 40, 40, 10)).toBe('uploading [##########] 40/40');
  });
});
