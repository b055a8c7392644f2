import { keepsRefusal, selfCheckVerdict, selfUpgradeStep } from './self-upgrade.js';

const refused = (version: string, pkg = 'florete-agent') => ({ package: pkg, version, reason: 'exited with 1', at: '2026-01-01T00:00:00.000Z' });
const step = (name: string, version: string, r: ReturnType<typeof refused> | null = null) =>
  selfUpgradeStep({ name, version, ownPackage: 'florete-agent', running: '0.1.0', refused: r });

describe('self-upgrade', () => {
  describe('what a declared package is to the running agent', () => {
    it('is an ordinary package when it is not the agent’s own', () => {
      expect(step('florete-fixture-hello', '1.0')).toBe('other');
      // Even at a version the agent refused for itself.
      expect(step('florete-fixture-hello', '0.2.0', refused('0.2.0'))).toBe('other');
    });

    it('is nothing to hand over to at the running version (an explicit epoch 0 included)', () => {
      expect(step('florete-agent', '0.1.0')).toBe('running');
      expect(step('florete-agent', '0:0.1.0')).toBe('running');
      expect(step('florete-agent', '0.1.0', refused('0.1.0'))).toBe('running');
    });

    it('is an upgrade at any other version, older ones included (a rollback is an ordinary publish)', () => {
      expect(step('florete-agent', '0.2.0')).toBe('upgrade');
      expect(step('florete-agent', '0.0.9')).toBe('upgrade');
      expect(step('florete-agent', '0.1.0-1')).toBe('upgrade');
    });

    it('is refused at a version whose self-check failed, and only at that one', () => {
      expect(step('florete-agent', '0.3.0', refused('0.3.0'))).toBe('refused');
      expect(step('florete-agent', '0:0.3.0', refused('0.3.0'))).toBe('refused');
      expect(step('florete-agent', '0.3.1', refused('0.3.0'))).toBe('upgrade');
      // A refusal recorded for another package name (the config changed) is not this one's.
      expect(step('florete-agent', '0.3.0', refused('0.3.0', 'florete-agent-old'))).toBe('upgrade');
    });
  });

  describe('how long a refusal lasts', () => {
    it('while the declaration still names the refused version', () => {
      expect(keepsRefusal(refused('0.3.0'), '0.3.0')).toBe(true);
      expect(keepsRefusal(refused('0.3.0'), '0:0.3.0')).toBe(true);
    });

    it('until it names another version, or no longer declares the agent’s package', () => {
      expect(keepsRefusal(refused('0.3.0'), '0.3.1')).toBe(false);
      expect(keepsRefusal(refused('0.3.0'), '0.1.0')).toBe(false);
      expect(keepsRefusal(refused('0.3.0'), null)).toBe(false);
      expect(keepsRefusal(null, '0.3.0')).toBe(false);
    });
  });

  describe('the new binary’s self-check', () => {
    const json = (version: string) => `flor warning line\n${JSON.stringify({ version, runtime: 'v20.0.0', config: null, state_dir: '/s', state: null })}\n`;

    it('passes when it exits 0 and says the version it was installed as', () => {
      expect(selfCheckVerdict({ code: 0, timedOut: false, output: json('0.2.0') }, '0.2.0', 60)).toEqual({ ok: true });
      expect(selfCheckVerdict({ code: 0, timedOut: false, output: json('0.2.0') }, '0:0.2.0', 60)).toEqual({ ok: true });
    });

    it('fails with its own output when it exits non-zero', () => {
      expect(selfCheckVerdict({ code: 1, timedOut: false, output: 'flor: self-check failed: bad config\n' }, '0.2.0', 60)).toEqual({
        ok: false,
        reason: 'exited with 1:\nflor: self-check failed: bad config',
      });
      expect(selfCheckVerdict({ code: null, timedOut: false, output: '' }, '0.2.0', 60)).toEqual({ ok: false, reason: 'exited with a signal' });
    });

    it('fails at its timeout, whatever it printed', () => {
      expect(selfCheckVerdict({ code: null, timedOut: true, output: 'still loading\n' }, '0.2.0', 5)).toEqual({
        ok: false,
        reason: 'timed out after 5 s:\nstill loading',
      });
    });

    it('fails when the binary is not the version installed, or says nothing a program can read', () => {
      expect(selfCheckVerdict({ code: 0, timedOut: false, output: json('0.1.0') }, '0.2.0', 60)).toEqual({
        ok: false,
        reason: 'the installed binary says it is version "0.1.0", not 0.2.0',
      });
      expect(selfCheckVerdict({ code: 0, timedOut: false, output: 'ok\n' }, '0.2.0', 60)).toEqual({
        ok: false,
        reason: 'exited 0 without its JSON verdict:\nok',
      });
    });
  });
});
