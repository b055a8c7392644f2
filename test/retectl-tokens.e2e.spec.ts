import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, STACK_TRACE } from './support/http.js';
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

  const admin = () => new Client(coordinator.url, coordinator.adminToken);

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

  describe('--role: an API token', () => {
    it('creates one over the API, prints it once, and it works with its role', async () => {
      const run = await retectl(['token', 'create', '--role', 'publisher', '--name', 'ci']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^flt\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}\n$/);
      expect(run.stderr).toMatch(/^publisher API token for ci \(id [0-9a-f]{18}\); it is not shown again\n$/);
      const ci = run.stdout.trim();
      const listed = await admin().get('/v1/api-tokens');
      expect(listed.body.items).toContainEqual(expect.objectContaining({ name: 'ci', role: 'publisher', revoked_at: null }));
      expect((await retectl(['status'], { FLORETE_TOKEN: ci })).code).toBe(0);
      expectOneLine(await retectl(['token', 'create', '--role', 'admin', '--name', 'escalate'], { FLORETE_TOKEN: ci }), 1, /may not do this: .*\(403 forbidden\)/);
    });

    it('gives id, name, role and token with --json', async () => {
      const run = await retectl(['token', 'create', '--role', 'reader', '--name', 'auditor', '--json']);
      expect(JSON.parse(run.stdout)).toEqual({ id: expect.any(String), name: 'auditor', role: 'reader', token: expect.stringMatching(/^flt\./) });
    });

    it('is a usage error unless exactly one kind of token is asked for', async () => {
      expectOneLine(await retectl(['token', 'create', 'laptop', '--role', 'reader', '--name', 'x']), 2, /give a node \(an enrolment token\) or --role and --name \(an API token\), not both/);
      expectOneLine(await retectl(['token', 'create']), 2, /give a node for an enrolment token \(token create <node>\) or --role reader\|publisher\|admin --name <name> for an API token/);
      expectOneLine(await retectl(['token', 'create', '--role', 'reader']), 2, /an API token needs --name/);
      expectOneLine(await retectl(['token', 'create', '--name', 'x']), 2, /an API token needs --role reader\|publisher\|admin/);
      expectOneLine(await retectl(['token', 'create', '--role', 'root', '--name', 'x']), 2, /--role.*must be reader, publisher or admin/);
      expectOneLine(await retectl(['token', 'create', '--role', 'reader', '--name', 'x', '--ttl', '1h']), 2, /--ttl is for enrolment tokens: API tokens do not expire/);
    });
  });

  describe('keys rotate', () => {
    const jwksKids = async () => ((await admin().get('/.well-known/jwks.json')).body.keys as { kid: string }[]).map((k) => k.kid);

    it('rotates the signing key and prints its kid; older keys stay in the JWKS', async () => {
      const before = await jwksKids();
      const run = await retectl(['keys', 'rotate']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^\S+\n$/);
      const kid = run.stdout.trim();
      expect(before).not.toContain(kid);
      expect(await jwksKids()).toEqual(expect.arrayContaining([...before, kid]));
      expect(run.stderr).toMatch(new RegExp(`^trust version \\d+: bundles are signed with ${kid} from now on; \\d+ node heads? moved to it \\(each bundle is signed with it when next fetched\\), the old key signs nothing more\n$`));

      const again = JSON.parse((await retectl(['keys', 'rotate', '--json'])).stdout);
      expect(again).toEqual({
        kid: expect.any(String),
        trust_version: expect.any(Number),
        revoked: [],
        resigned: expect.any(Number),
        jwks: { keys: expect.arrayContaining([expect.objectContaining({ kid }), expect.objectContaining({ kid: again.kid })]) },
      });
      expect(again.kid).not.toBe(kid);
    });

    it('revokes a key: it leaves the JWKS, and revoking it again changes nothing', async () => {
      const kids = await jwksKids();
      const old = kids[0];
      const run = await retectl(['keys', 'revoke', old]);
      expect(run.code).toBe(0);
      expect(run.stderr).toMatch(new RegExp(`^trust version \\d+ revokes ${old}\n$`));
      expect(await jwksKids()).not.toContain(old);
      expectOneLine(await retectl(['keys', 'revoke', old]), 1, new RegExp(`key ${old} was already revoked \\(409 already_revoked\\)`));
      expectOneLine(await retectl(['keys', 'revoke', 'no-such-key']), 1, /no signing key no-such-key is known to this coordinator \(404 unknown_key\)/);
    });

    it('needs an admin token', async () => {
      const reader = (await admin().post('/v1/api-tokens', { name: 'rotator', role: 'reader' })).body.token as string;
      expectOneLine(await retectl(['keys', 'rotate'], { FLORETE_TOKEN: reader }), 1, /may not do this: .*\(403 forbidden\)/);
    });

    it('lists every key of the trust chain with its state and steps, from the public chain, with no token', async () => {
      // By now: the first key, rotated out and then revoked; a second, rotated out; the third signs.
      const keysList = (args: string[] = []) => runRetectl(['keys', 'list', ...args], { env: { FLORETE_COORDINATOR: coordinator.url } });
      const trust = (await admin().get('/v1/trust')).body as { head: number };
      const signer = (await jwksKids()).at(-1)!;
      const json = await keysList(['--json']);
      expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
      const history = JSON.parse(json.stdout) as { trust_version: number; signer: string; keys: { kid: string; state: string; listed_version: number; retired_version: number | null; revoked_version: number | null; listed_at: string }[] };
      expect(history.trust_version).toBe(trust.head);
      expect(history.signer).toBe(signer);
      expect(history.keys.map((k) => [k.state, k.listed_version, k.retired_version, k.revoked_version])).toEqual([
        ['revoked', 1, 2, 4],
        ['retired', 2, 3, null],
        ['active', 3, null, null],
      ]);
      expect(history.keys[2].kid).toBe(signer);
      expect(history.keys[0].listed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

      const text = await keysList();
      expect(text.code).toBe(0);
      const lines = text.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^KID\s+STATE\s+SINCE\s+RETIRED\s+REVOKED$/);
      expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(0, 2))).toEqual(history.keys.map((k) => [k.kid, k.kid === signer ? 'active, signs' : k.state]));
      expect(lines[1]).toMatch(/ \(v1\)\s+\S+ \(v2\)\s+\S+ \(v4\)$/);
      expect(text.stderr).toBe(`trust version ${trust.head}: ${signer} signs bundles, checkpoints and the next trust version\n`);
    });
  });
});
