import { packageAction } from './package-resources.js';

describe('what a pass does with one declared package', () => {
  it('installs an ordinary package dpkg lacks at that version, and leaves one it has', () => {
    expect(packageAction(false, 'other')).toBe('install');
    expect(packageAction(true, 'other')).toBe('unchanged');
  });

  it('leaves the agent’s own package alone at the version running', () => {
    expect(packageAction(true, 'running')).toBe('unchanged');
    expect(packageAction(false, 'running')).toBe('install');
  });

  it('installs another version of the agent’s own package, and runs it once when something else already installed it', () => {
    expect(packageAction(false, 'upgrade')).toBe('install');
    // dpkg has it, but this process still runs the old version: not "unchanged", or it would never hand over.
    expect(packageAction(true, 'upgrade')).toBe('run-installed');
  });

  it('refuses a version whose self-check failed, whether or not dpkg has it', () => {
    expect(packageAction(false, 'refused')).toBe('refused');
    expect(packageAction(true, 'refused')).toBe('refused');
  });
});
