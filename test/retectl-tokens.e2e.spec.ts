import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { STACK_TRACE } from './support/http.js';
import { runRetectl, type RetectlRun } from './support/retectl-process.js';

jest.setTimeout(180_000);

/** retectl's token commands against the real coordinator process. */
describe('retectl token create', () => {
  let coordinator: CoordinatorProcess;
  const retectl = (args: string[], env: Record<string, string> = {}) =>
    runRetectl(args, { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken!, ...env } });
  /** A failure is one line on stderr, prefixed `retectl:`, with no stack trace. */
  const expectOneLine = (run: RetectlRun, code: number, pattern: RegExp) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code, stderr: expect.stringMatching(pattern) });
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^retectl: /);
    expect(run.stderr + run.stdout).not.toMatch(STACK_TRACE);
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  describe('--ttl of an enrolment token', () => {
    /** Seconds from now until the token created with this --ttl expires. */
    const lifetime = async (ttl?: string): Promise<number> => {
      const run = await retectl(['token', 'create', 'laptop', ...(ttl ? ['--ttl', ttl] : []), '--json']);
      expect(run.code).toBe(0);
      return (Date.parse(JSON.parse(run.stdout).expires_at) - Date.now()) / 1000;
    };

    it('takes durations as the rete writes them', async () => {
      expect(await lifetime('90s')).toBeCloseTo(90, -1);
      expect(await lifetime('1h')).toBeCloseTo(3600, -1);
      expect(await lifetime('1h30m')).toBeCloseTo(5400, -1);
      expect(await lifetime('7d')).toBeCloseTo(7 * 86400, -1);
      expect(await lifetime()).toBeCloseTo(3600, -1);
    });

    it('says so in its help, with examples and the default as a duration', async () => {
      const help = (await retectl(['token', 'create', '--help'])).stdout.replace(/\s+/g, ' ');
      expect(help).toMatch(/--ttl <duration> how long an enrolment token stays valid: a duration such as 90s, 10m, 1h, 1h30m or 7d, from 1m to 30d \(default: 1h\)/);
      expect(help).not.toContain('3600');
    });

    it('refuses a bare number, saying a unit is missing', async () => {
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '3600']), 2, /--ttl.*3600 has no unit: write 3600s, or a duration such as 1h/);
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '10s']), 2, /--ttl.*must be between 1m and 30d/);
    });
  });
});
