import { growthChosen } from './young-generation.js';

describe('growthChosen', () => {
  it('sees the growth factor the operator gave as a node flag or in NODE_OPTIONS, spelt with - or _', () => {
    expect(growthChosen(['--semi-space-growth-factor=4'], undefined)).toBe(true);
    expect(growthChosen([], '--max-old-space-size=512 --semi_space_growth_factor=3')).toBe(true);
    expect(growthChosen(['--enable-source-maps'], ' --max-semi-space-size=8 ')).toBe(false);
    expect(growthChosen([], undefined)).toBe(false);
  });
});
