import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, expectProblem, STACK_TRACE } from './support/http.js';
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

    it('says so in its help, with examples and the defaults as durations', async () => {
      const help = (await retectl(['token', 'create', '--help'])).stdout.replace(/\s+/g, ' ');
      expect(help).toMatch(
        /--ttl <duration> how long the token stays valid: a duration such as 90s, 10m, 1h, 1h30m or 7d; an enrolment token 1m to 30d \(default: 1h\), an API token 1m to 366d \(default: the coordinator's, FLORETE_API_TOKEN_TTL\)/,
      );
      expect(help).toMatch(/--no-expiry an API token that never expires, listed as such/);
      expect(help).not.toContain('3600');
    });

    it('refuses a bare number, saying a unit is missing, and a life beyond 30d or --no-expiry', async () => {
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '3600']), 2, /--ttl.*3600 has no unit: write 3600s, or a duration such as 1h/);
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '10s']), 2, /--ttl.*must be between 1m and 30d/);
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '31d']), 2, /--ttl of an enrolment token must be between 1m and 30d/);
      expectOneLine(
        await retectl(['token', 'create', 'laptop', '--no-expiry']),
        2,
        /--no-expiry is for API tokens: an enrolment token is single use and always expires/,
      );
    });
  });

  describe('--role: an API token', () => {
    it('creates one over the API, prints it once, and it works with its role', async () => {
      const run = await retectl(['token', 'create', '--role', 'publisher', '--name', 'ci']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^flt\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}\n$/);
      // No --ttl: the coordinator's default life (FLORETE_API_TOKEN_TTL, 90 days unless set), said at creation.
      expect(run.stderr).toMatch(
        /^publisher API token for ci \(id [0-9a-f]{18}\), expires \S+ \(in 90d, the coordinator's default: --ttl or --no-expiry to choose\); it is not shown again\n$/,
      );
      const ci = run.stdout.trim();
      const listed = await admin().get('/v1/api-tokens');
      expect(listed.body.items).toContainEqual(
        expect.objectContaining({ name: 'ci', role: 'publisher', state: 'active', created_by: 'admin', revoked_at: null }),
      );
      expect((await retectl(['status'], { FLORETE_TOKEN: ci })).code).toBe(0);
      expectOneLine(
        await retectl(['token', 'create', '--role', 'admin', '--name', 'escalate'], { FLORETE_TOKEN: ci }),
        1,
        /may not do this: .*\(403 forbidden\)/,
      );
    });

    it('gives id, name, role, token, who made it and when it expires with --json', async () => {
      const run = await retectl(['token', 'create', '--role', 'reader', '--name', 'auditor', '--json']);
      const body = JSON.parse(run.stdout);
      expect(body).toEqual({
        id: expect.any(String),
        name: 'auditor',
        role: 'reader',
        token: expect.stringMatching(/^flt\./),
        created_at: expect.any(String),
        created_by: 'admin',
        expires_at: expect.any(String),
        scope: null,
        default_expiry: true,
      });
      expect((Date.parse(body.expires_at) - Date.parse(body.created_at)) / 1000).toBe(90 * 86400);
    });

    it('takes --ttl (1m to 366d) or --no-expiry, said at creation and listed as such', async () => {
      const hour = await retectl(['token', 'create', '--role', 'reader', '--name', 'hourly', '--ttl', '1h30m']);
      expect(hour.stderr).toMatch(/^reader API token for hourly \(id [0-9a-f]{18}\), expires \S+ \(in 1h30m\); it is not shown again\n$/);
      const year = JSON.parse((await retectl(['token', 'create', '--role', 'reader', '--name', 'yearly', '--ttl', '366d', '--json'])).stdout);
      expect({ life: (Date.parse(year.expires_at) - Date.parse(year.created_at)) / 1000, default_expiry: year.default_expiry }).toEqual({
        life: 366 * 86400,
        default_expiry: false,
      });
      const never = await retectl(['token', 'create', '--role', 'publisher', '--name', 'pipeline', '--no-expiry']);
      expect(never.stderr).toMatch(/^publisher API token for pipeline \(id [0-9a-f]{18}\), never expires \(--no-expiry\); it is not shown again\n$/);
      const listed = (await admin().get('/v1/api-tokens')).body.items as { name: string; expires_at: string | null }[];
      expect(listed.find((t) => t.name === 'pipeline')?.expires_at).toBeNull();
      expect(listed.find((t) => t.name === 'hourly')?.expires_at).toEqual(expect.any(String));
    });

    it('is a usage error unless exactly one kind of token is asked for', async () => {
      expectOneLine(
        await retectl(['token', 'create', 'laptop', '--role', 'reader', '--name', 'x']),
        2,
        /give a node \(an enrolment token\) or --role and --name \(an API token\), not both/,
      );
      expectOneLine(
        await retectl(['token', 'create']),
        2,
        /give a node for an enrolment token \(token create <node>\) or --role reader\|publisher\|admin --name <name> for an API token/,
      );
      expectOneLine(await retectl(['token', 'create', '--role', 'reader']), 2, /an API token needs --name/);
      expectOneLine(await retectl(['token', 'create', '--name', 'x']), 2, /an API token needs --role reader\|publisher\|admin/);
      expectOneLine(await retectl(['token', 'create', '--role', 'root', '--name', 'x']), 2, /--role.*must be reader, publisher or admin/);
      expectOneLine(
        await retectl(['token', 'create', '--role', 'reader', '--name', 'x', '--ttl', '1h', '--no-expiry']),
        2,
        /give --ttl or --no-expiry, not both/,
      );
      expectOneLine(
        await retectl(['token', 'create', '--role', 'reader', '--name', 'x', '--ttl', '367d']),
        2,
        /--ttl of an API token must be between 1m and 366d \(--no-expiry: one that never expires\)/,
      );
      // The coordinator holds the same bounds, whoever calls it.
      expectProblem(await admin().post('/v1/api-tokens', { name: 'x', role: 'reader', ttl_seconds: 30 }), 422, 'invalid_body');
      expectProblem(await admin().post('/v1/api-tokens', { name: 'x', role: 'reader', ttl_seconds: 3600, no_expiry: true }), 422, 'invalid_body');
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
      expect(run.stderr).toMatch(
        new RegExp(
          `^trust version \\d+: bundles are signed with ${kid} from now on; \\d+ node heads? moved to it \\(each bundle is signed with it when next fetched\\), the old key signs nothing more\n$`,
        ),
      );

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
      const history = JSON.parse(json.stdout) as {
        trust_version: number;
        signer: string;
        keys: { kid: string; state: string; listed_version: number; retired_version: number | null; revoked_version: number | null; listed_at: string }[];
      };
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

/**
 * The lifecycle of API tokens through retectl against a real coordinator: listed without secrets,
 * last use noted, revoked by name or id with who did it in the ledger, refused from then on with a
 * code saying why, and never the last admin token that still works.
 */
describe('retectl token list, token revoke and whoami', () => {
  let coordinator: CoordinatorProcess;
  let adminToken: string;
  const retectl = (args: string[], token = adminToken) => runRetectl(args, { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: token } });
  const json = async (args: string[], token = adminToken) => {
    const run = await retectl([...args, '--json'], token);
    if (run.code !== 0) throw new Error(`retectl ${args.join(' ')}: ${run.code} ${run.stderr}`);
    return JSON.parse(run.stdout);
  };
  const create = async (role: string, name: string, extra: string[] = []) =>
    (await json(['token', 'create', '--role', role, '--name', name, ...extra])) as { id: string; token: string };
  const list = async () =>
    (await json(['token', 'list'])).items as {
      id: string;
      name: string;
      role: string;
      state: string;
      created_by: string;
      created_at: string;
      expires_at: string | null;
      last_used_at: string | null;
      revoked_at: string | null;
      revoked_by: string | null;
    }[];
  const byName = async (name: string) => (await list()).filter((t) => t.name === name);

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    adminToken = coordinator.adminToken!;
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('lists every token with who created it, when, its expiry, its last use and its state, and never a secret', async () => {
    const ci = await create('publisher', 'ci');
    await create('reader', 'grafana', ['--ttl', '2h']);
    await create('admin', 'vault', ['--no-expiry']);
    expect((await retectl(['status'], ci.token)).code).toBe(0);

    const items = await list();
    expect(items.map((t) => [t.name, t.role, t.state, t.created_by])).toEqual([
      ['admin', 'admin', 'active', 'coordinator'],
      ['ci', 'publisher', 'active', 'admin'],
      ['grafana', 'reader', 'active', 'admin'],
      ['vault', 'admin', 'active', 'admin'],
    ]);
    for (const t of items)
      expect(Object.keys(t).sort()).toEqual([
        'created_at',
        'created_by',
        'expires_at',
        'id',
        'last_used_at',
        'name',
        'revoked_at',
        'revoked_by',
        'role',
        'scope',
        'state',
      ]);
    const text = JSON.stringify(items);
    expect(text).not.toContain(ci.token.split('.')[2]);
    expect(text).not.toContain('secret');
    const [ciRow] = items.filter((t) => t.name === 'ci');
    // Used once, a moment ago: this replica answers with the use it has not written yet.
    expect(Date.now() - Date.parse(ciRow.last_used_at!)).toBeLessThan(60_000);
    expect(items.find((t) => t.name === 'grafana')!.last_used_at).toBeNull();
    expect(items.find((t) => t.name === 'vault')!.expires_at).toBeNull();

    const table = await retectl(['token', 'list']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+ID\s+ROLE\s+SCOPE\s+STATE\s+CREATED BY\s+CREATED\s+EXPIRES\s+LAST USED$/);
    expect(lines.find((l) => l.startsWith('ci '))).toMatch(
      new RegExp(`^ci\\s+${ciRow.id}\\s+publisher\\s+all\\s+active\\s+admin\\s+\\S+ ago\\s+in 89d23h\\s+\\S+ ago$`),
    );
    expect(lines.find((l) => l.startsWith('vault '))).toMatch(/\s+never\s+never$/);
    expect(lines.find((l) => l.startsWith('grafana '))).toMatch(/\s+in 1h59m\s+never$/);
    expect(table.stderr).toBe('4 active tokens, 0 expired, 0 revoked; revoke one with retectl token revoke <name|id>\n');
  });

  it('whoami: the token in use, its role, what it may do and when it expires', async () => {
    const ci = (await byName('ci'))[0];
    const token = await create('publisher', 'deploy-bot', ['--ttl', '7d']);
    const who = await json(['whoami'], token.token);
    expect(who).toEqual({
      id: token.id,
      name: 'deploy-bot',
      role: 'publisher',
      created_at: expect.any(String),
      created_by: 'admin',
      expires_at: expect.any(String),
      scope: null,
    });
    const text = await retectl(['whoami'], token.token);
    expect(text.stdout).toMatch(
      /^name {5}deploy-bot \(recorded as the actor of what this token does\)\nid {7}[0-9a-f]{18}\nrole {5}publisher\nmay {6}what a reader may, and upload, publish, roll back, retire and steer rollouts\nscope {4}every node\nexpires  \S+ \(in 6d23h\)\ncreated  \S+ by admin\n$/,
    );
    expect((await json(['whoami'])).name).toBe('admin');
    expect(ci.state).toBe('active');
  });

  it('only an admin lists or revokes', async () => {
    const reader = await create('reader', 'auditor');
    const listed = await retectl(['token', 'list'], reader.token);
    expect(listed.code).toBe(1);
    expect(listed.stderr).toMatch(/may not do this: role reader may not do this; it needs admin \(403 forbidden\)/);
    expect((await retectl(['token', 'revoke', 'ci'], reader.token)).stderr).toMatch(/\(403 forbidden\)/);
    expect((await byName('ci'))[0].state).toBe('active');
  });

  it('revokes by name: refused at once with token_revoked, listed with who, recorded in the ledger', async () => {
    const ci = (await byName('ci'))[0];
    const secret = await create('publisher', 'ci-2');
    const run = await retectl(['token', 'revoke', 'ci-2']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${secret.id}\n`);
    expect(run.stderr).toBe(
      `revoked the publisher API token ci-2 (id ${secret.id}): every request with it is refused from now on (401 token_revoked); recorded in the ledger as yours\n`,
    );

    const refused = await new Client(coordinator.url, secret.token).get('/v1/nodes');
    expectProblem(refused, 401, 'token_revoked');
    expect(refused.body.detail).toMatch(new RegExp(`^API token ci-2 \\(id ${secret.id}\\) was revoked at \\S+ by admin: ask an admin for a new one$`));
    const status = await retectl(['status'], secret.token);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(
      /^retectl: the coordinator refused the API token: API token ci-2 .* was revoked at \S+ by admin: ask an admin for a new one \(401 token_revoked\); give the new one with retectl config set token \(or --token, FLORETE_TOKEN\)\n$/,
    );
    expect((await byName('ci-2'))[0]).toMatchObject({ state: 'revoked', revoked_by: 'admin', revoked_at: expect.any(String) });
    // The other token of the same holder is untouched.
    expect((await byName('ci'))[0]).toMatchObject({ id: ci.id, state: 'active' });

    const events = (await new Client(coordinator.url, adminToken).get('/v1/ledger/events?after=0&limit=1000')).body.items as {
      type: string;
      stream: string;
      data: Record<string, unknown>;
      meta: { actor: string };
    }[];
    expect(events.filter((e) => e.type === 'api_token_revoked').map((e) => ({ stream: e.stream, data: e.data, actor: e.meta.actor }))).toEqual([
      { stream: 'identity:api', data: { id: secret.id, name: 'ci-2', role: 'publisher' }, actor: 'admin' },
    ]);
    const created = events.find((e) => e.type === 'api_token_created' && e.data.name === 'ci-2');
    expect(created).toMatchObject({
      stream: 'identity:api',
      meta: { actor: 'admin' },
      data: { id: secret.id, role: 'publisher', expires_at: expect.any(String) },
    });
    expect(JSON.stringify(events)).not.toContain(secret.token.split('.')[2]);
    expect((await new Client(coordinator.url, adminToken).post('/v1/ledger/verify')).body).toMatchObject({ ok: true });
  });

  it('says what went wrong revoking: already revoked, unknown, or a name several tokens share (then by id)', async () => {
    const again = await retectl(['token', 'revoke', 'ci-2']);
    expect({ code: again.code, stderr: again.stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(/^retectl: API token ci-2 \(id [0-9a-f]{18}\) was already revoked at \S+ by admin \(409 already_revoked\)\n$/),
    });
    const unknown = await retectl(['token', 'revoke', 'nobody']);
    expect(unknown.stderr).toBe('retectl: no API token has the name or id "nobody" (retectl token list shows them all) (404 unknown_token)\n');
    const first = await create('reader', 'laptop');
    const second = await create('reader', 'laptop');
    const ambiguous = await retectl(['token', 'revoke', 'laptop']);
    expect(ambiguous.stderr).toBe(
      `retectl: 2 API tokens named "laptop" are not revoked: revoke one by its id (${first.id}, ${second.id}) (409 ambiguous_token)\n`,
    );
    expect((await retectl(['token', 'revoke', first.id])).code).toBe(0);
    // One of them left: the name is enough again.
    expect((await retectl(['token', 'revoke', 'laptop'])).stdout).toBe(`${second.id}\n`);
  });

  it('never revokes the last admin token that has not expired (409 saying how to make another); once there is another, it may go', async () => {
    // Two admin tokens work: the first one, and vault (no expiry).
    expect((await retectl(['token', 'revoke', 'vault'])).code).toBe(0);
    const last = await retectl(['token', 'revoke', 'admin']);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(
      /^retectl: API token admin \(id [0-9a-f]{18}\) is the last admin token that has not expired: revoked, nobody could administer the coordinator over the API\. Create another admin token first \(retectl token create --role admin --name <who>\), then revoke this one; with no admin token at hand, the break-glass way is the coordinator's own command on its machine, as its user: florete-coordinator token create-admin \(409 last_admin_token\)\n$/,
    );
    expect((await byName('admin'))[0].state).toBe('active');

    const successor = await create('admin', 'ops-alice');
    const handover = await retectl(['token', 'revoke', 'admin'], successor.token);
    expect(handover.code).toBe(0);
    expectProblem(await new Client(coordinator.url, adminToken).get('/v1/whoami'), 401, 'token_revoked');
    adminToken = successor.token;
    expect((await byName('admin'))[0]).toMatchObject({ state: 'revoked', revoked_by: 'ops-alice' });
    // ops-alice is now the last one: it may not revoke itself.
    expect((await retectl(['token', 'revoke', successor.id])).stderr).toMatch(/\(409 last_admin_token\)\n$/);
  });

  it('answers a token it does not know with the generic 401: a guess never learns that a token exists or was revoked', async () => {
    const revoked = (await byName('ci-2'))[0];
    const forged = `flt.${revoked.id}.${'A'.repeat(43)}`;
    for (const token of [forged, `flt.${'0'.repeat(18)}.${'A'.repeat(43)}`]) {
      const r = await new Client(coordinator.url, token).get('/v1/nodes');
      expectProblem(r, 401, 'unauthenticated');
      expect(r.body.detail).toBe('API token is unknown or revoked');
      expect(r.text).not.toContain('ci-2');
    }
  });
});
