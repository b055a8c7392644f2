import { tiersChosen } from './compiler-tiers.js';

describe('tiersChosen', () => {
  it('sees a tier the operator turned on or off as a node flag or in NODE_OPTIONS, spelt with - or _', () => {
    expect(tiersChosen(['--no-maglev'], undefined)).toBe(true);
    expect(tiersChosen([], '--max-old-space-size=512 --no_turbofan')).toBe(true);
    expect(tiersChosen(['--opt'], undefined)).toBe(true);
    expect(tiersChosen([], '--jitless')).toBe(true);
    expect(tiersChosen(['--turbofan=true'], undefined)).toBe(true);
    expect(tiersChosen([], '--no-sparkplug')).toBe(true);
  });

  it('leaves flags that only share a prefix with a tier, and no flags at all, to the hold', () => {
    expect(tiersChosen(['--maglev-inlining', '--turbofan-inline-date-accessors', '--optimize-for-size', '--sparkplug-filter=*'], ' --trace-opt ')).toBe(false);
    expect(tiersChosen(['--enable-source-maps'], undefined)).toBe(false);
    expect(tiersChosen([], undefined)).toBe(false);
  });
});
