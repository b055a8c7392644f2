import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startCoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { stopChild } from './support/child.js';

const MAIN = resolve('dist/apps/coordinator/src/main.js');

/** The coordinator's local commands, run as the operator would on the coordinator host. */
function coordinator(dataDir: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, FLORETE_DATA: dataDir, FLORETE_LOG_LEVEL: 'warn', PORT: '0', FLORETE_MIRROR: 'off' };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, [MAIN, ...args], { env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('coordinator commands', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-cli-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('migrates a new data dir once, then reports it up to date', () => {
    const first = coordinator(dataDir, 'migrate');
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/^applied: 0001-ledger, 0002-projections, 0003-identity/);
    const again = coordinator(dataDir, 'migrate');
    expect(again.status).toBe(0);
    expect(again.stdout).toBe('database is up to date\n');
  });

  it('creates an API token that the running coordinator accepts with its role', async () => {
    const created = coordinator(dataDir, 'token', 'create', '--role', 'reader', '--name', 'auditor');
    expect(created.status).toBe(0);
    const token = /^reader token for auditor: (flt\.\S+)$/m.exec(created.stdout)?.[1];
    expect(token).toBeDefined();
    const running = await startCoordinatorProcess({ dataDir });
    try {
      const head = await fetch(`${running.url}/v1/ledger/head`, { headers: { authorization: `Bearer ${token}` } });
      expect(head.status).toBe(200);
      const publish = await fetch(`${running.url}/v1/publishes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"message":"x","nodes":{}}',
      });
      expect(publish.status).toBe(403);
    } finally {
      await running.stop();
    }
  });

  it('records in the ledger each token it creates itself, as the HTTP route does: the first admin token and token create', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'florete-cli-events-'));
    try {
      let running = await startCoordinatorProcess({ dataDir: fresh });
      const admin = running.adminToken;
      await running.stop();
      expect(admin).toBeDefined();
      const created = coordinator(fresh, 'token', 'create', '--role', 'publisher', '--name', 'ci');
      expect(created.status).toBe(0);
      const secret = /^publisher token for ci: (flt\.\S+)$/m.exec(created.stdout)?.[1];
      expect(secret).toBeDefined();
      running = await startCoordinatorProcess({ dataDir: fresh });
      try {
        const answer = await fetch(`${running.url}/v1/ledger/events?after=0&limit=100`, { headers: { authorization: `Bearer ${admin}` } });
        expect(answer.status).toBe(200);
        const events = ((await answer.json()) as { items: { type: string; stream: string; data: Record<string, unknown>; meta: Record<string, unknown> }[] })
          .items;
        const tokens = events.filter((e) => e.type === 'api_token_created');
        expect(tokens.map((e) => ({ stream: e.stream, name: e.data.name, role: e.data.role, actor: e.meta.actor }))).toEqual([
          { stream: 'identity:api', name: 'admin', role: 'admin', actor: 'coordinator' },
          { stream: 'identity:api', name: 'ci', role: 'publisher', actor: 'coordinator-cli' },
        ]);
        // The event names the token by its id, never by its secret.
        expect(JSON.stringify(events)).not.toContain(secret!.split('.').pop());
        expect(tokens[1].data.id).toBe(secret!.split('.')[1]);
        const verify = coordinatorVerify(running.url, admin!);
        expect(await verify).toMatchObject({ ok: true });
      } finally {
        await running.stop();
      }
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('on a terminal shows the first admin token itself, as well as writing it to the 0600 file', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'florete-cli-tty-'));
    try {
      const { output, exit } = await serveOnTerminal(fresh);
      const file = join(fresh, 'first-admin-token');
      const token = readFileSync(file, 'utf8').trim();
      expect(token).toMatch(/^flt\.\S+$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const lines = output.split(/\r?\n/);
      expect(lines).toContain(`admin token: ${token}`);
      expect(lines).toContain(`(also in ${file}, mode 0600: remove it once the token is stored)`);
      expect(exit).toMatchObject({ timedOut: false });
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('refuses to serve with an apt repository key file that holds no key, naming the file, and leaves it as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'florete-cli-repo-key-'));
    try {
      const keyFile = join(dir, 'keys', 'repo-signing-key.asc');
      mkdirSync(join(dir, 'keys'), { recursive: true, mode: 0o700 });
      writeFileSync(keyFile, '-----BEGIN PGP PRIVATE KEY BLOCK-----\n\ntruncated\n', { mode: 0o600 });
      const run = coordinator(dir, 'serve');
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain(`the apt repository key ${keyFile}: `);
      expect(run.stdout).not.toMatch(/^listening: /m);
      expect(readFileSync(keyFile, 'utf8')).toBe('-----BEGIN PGP PRIVATE KEY BLOCK-----\n\ntruncated\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an unknown role as a usage error without creating anything', () => {
    const r = coordinator(dataDir, 'token', 'create', '--role', 'root', '--name', 'x');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('must be admin, publisher or reader');
    expect(r.stdout).toBe('');
  });

  it('rotates the signing key, keeping the old kid, in a 0600 key file', () => {
    const file = join(dataDir, 'keys', 'signing-keys.json');
    const before = JSON.parse(readFileSync(file, 'utf8')) as { active: string; keys: { kid: string }[] };
    const r = coordinator(dataDir, 'keys', 'rotate');
    expect(r.status).toBe(0);
    const kid = /^new signing key: (\S+)$/m.exec(r.stdout)?.[1];
    const after = JSON.parse(readFileSync(file, 'utf8')) as { active: string; keys: { kid: string }[] };
    expect(after.active).toBe(kid);
    expect(after.keys.map((k) => k.kid)).toEqual([...before.keys.map((k) => k.kid), kid]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('verifies the ledger chain from the command line', () => {
    const r = coordinator(dataDir, 'verify');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, position: expect.any(Number) });
  });

  // A mistyped FLORETE_DATA must not verify, back up or rekey a database made on the spot: the
  // commands that work on what a coordinator recorded refuse a data dir without one, and create nothing.
  it('refuses verify, backup, rebuild, mirror rebuild and the key commands on a data dir that holds no database, naming it, creating nothing', () => {
    const root = mkdtempSync(join(tmpdir(), 'florete-cli-none-'));
    try {
      const absent = join(root, 'mistyped');
      const empty = join(root, 'empty');
      mkdirSync(empty);
      const commands = [['verify'], ['backup', join(root, 'backup')], ['rebuild'], ['mirror', 'rebuild'], ['keys', 'rotate'], ['keys', 'revoke', 'k1']];
      for (const dir of [absent, empty]) {
        for (const args of commands) {
          const r = coordinator(dir, ...args);
          expect({ args, status: r.status, stdout: r.stdout }).toEqual({ args, status: 1, stdout: '' });
          expect(r.stderr).toContain(`${dir} holds no coordinator database`);
        }
      }
      expect(readdirSync(root).sort()).toEqual(['empty']);
      expect(readdirSync(empty)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

/**
 * `coordinator serve` with its stdout on a pseudo-terminal (util-linux `script`), as `npm start` in a
 * shell has it: runs until it prints `listening:`, then stops it. Every wait is bounded.
 */
async function serveOnTerminal(dataDir: string): Promise<{ output: string; exit: { timedOut: boolean } }> {
  const env: NodeJS.ProcessEnv = { ...process.env, FLORETE_DATA: dataDir, FLORETE_LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', FLORETE_MIRROR: 'off' };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  const command = `exec '${process.execPath}' '${MAIN}' serve`;
  // Its own process group: stopping it reaches script and the coordinator under it.
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const stopGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      /* already gone */
    }
  };
  try {
    const deadline = Date.now() + 180_000;
    while (!/^listening: /m.test(output)) {
      if (ended()) throw new Error(`coordinator under script exited before listening:\n${output}`);
      if (Date.now() > deadline) throw new Error(`coordinator under script did not listen within 180 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    if (!ended()) stopGroup('SIGTERM');
  }
  const timedOut = await new Promise<boolean>((done) => {
    if (ended()) return done(false);
    const timer = setTimeout(() => {
      stopGroup('SIGKILL');
      done(true);
    }, 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done(false);
    });
  });
  return { output, exit: { timedOut } };
}

/** The ledger's own verdict on its hash chain, asked of the running coordinator. */
async function coordinatorVerify(url: string, token: string): Promise<unknown> {
  const r = await fetch(`${url}/v1/ledger/verify`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  return r.json();
}

/** Every file under dir with its size and sha256: what a refused command must leave as it was. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length + 1)] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}

describe('one process holds the embedded database', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-lock-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('refuses every command that opens the database while the coordinator serves, naming it, and writes nothing', async () => {
    // The mirror off: the running server itself must write nothing while the data dir is compared.
    const running = await startCoordinatorProcess({ dataDir, env: { FLORETE_MIRROR: 'off' } });
    try {
      const before = snapshot(dataDir);
      const refused = coordinator(dataDir, 'token', 'create', '--role', 'reader', '--name', 'x');
      expect(refused.status).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`the coordinator (pid ${running.child.pid}) holds this data dir ${dataDir}`);
      expect(refused.stderr).toContain('retectl token create --role');
      const breakGlass = coordinator(dataDir, 'token', 'create-admin');
      expect({ status: breakGlass.status, stdout: breakGlass.stdout }).toEqual({ status: 1, stdout: '' });
      expect(breakGlass.stderr).toContain(`the coordinator (pid ${running.child.pid}) holds this data dir ${dataDir}`);
      expect(breakGlass.stderr).toContain('without an admin token: stop the coordinator');
      for (const args of [['serve'], ['migrate'], ['keys', 'rotate'], ['rebuild'], ['mirror', 'rebuild'], ['verify']]) {
        const r = coordinator(dataDir, ...args);
        expect({ args, status: r.status, stdout: r.stdout }).toEqual({ args, status: 1, stdout: '' });
        expect(r.stderr).toContain(`(pid ${running.child.pid})`);
      }
      expect(snapshot(dataDir)).toEqual(before);
      // The server still answers, and knows only the token it made itself.
      const tokens = await new Client(running.url, running.adminToken).get('/v1/api-tokens');
      expect(tokens.body.items.map((t: { name: string }) => t.name)).toEqual(['admin']);
    } finally {
      await running.stop();
    }
  });

  it('works once the coordinator stopped, and the token it prints is accepted after the next start', async () => {
    const created = coordinator(dataDir, 'token', 'create', '--role', 'reader', '--name', 'auditor');
    expect(created.status).toBe(0);
    const token = /^reader token for auditor: (flt\.\S+)$/m.exec(created.stdout)?.[1];
    const running = await startCoordinatorProcess({ dataDir });
    try {
      expect((await new Client(running.url, token).get('/v1/ledger/head')).status).toBe(200);
    } finally {
      await running.stop();
    }
  });

  it('token create-admin, once the coordinator stopped: an admin token printed once, accepted after the next start, recorded in the ledger', async () => {
    const named = coordinator(dataDir, 'token', 'create-admin', '--name', 'ops-alice');
    expect(named).toMatchObject({ status: 0, stderr: '' });
    // It expires as any token made without --ttl does, and says when.
    const token = /^admin token for ops-alice: (flt\.\S+)\nexpires at \S+ \(FLORETE_API_TOKEN_TTL\)\n$/.exec(named.stdout)?.[1];
    expect(token).toBeDefined();
    const unnamed = coordinator(dataDir, 'token', 'create-admin');
    expect(unnamed.status).toBe(0);
    expect(unnamed.stdout).toMatch(/^admin token for break-glass: flt\.\S+\nexpires at \S+ \(FLORETE_API_TOKEN_TTL\)\n$/);
    expect(coordinator(dataDir, 'token', 'create-admin', '--name', ' ')).toMatchObject({ status: 1, stdout: '' });
    const forever = coordinator(dataDir, 'token', 'create-admin', '--name', 'vault', '--no-expiry');
    expect(forever.stdout).toMatch(/^admin token for vault: flt\.\S+\nnever expires \(--no-expiry\)\n$/);
    const hour = coordinator(dataDir, 'token', 'create', '--role', 'reader', '--name', 'hourly', '--ttl', '1h');
    expect(hour.stdout).toMatch(/^reader token for hourly: flt\.\S+\nexpires at \S+ \(--ttl\)\n$/);
    expect(coordinator(dataDir, 'token', 'create-admin', '--ttl', '1h', '--no-expiry')).toMatchObject({
      status: 1,
      stdout: '',
      stderr: 'coordinator: give --ttl or --no-expiry, not both\n',
    });
    expect(coordinator(dataDir, 'token', 'create-admin', '--ttl', '3600')).toMatchObject({
      status: 1,
      stdout: '',
      stderr: expect.stringContaining('3600 has no unit: write 3600s, or a duration such as 30d'),
    });
    const running = await startCoordinatorProcess({ dataDir });
    try {
      const client = new Client(running.url, token);
      // Admin only: listing the tokens.
      const tokens = await client.get('/v1/api-tokens');
      expect(tokens.status).toBe(200);
      const items = tokens.body.items as { name: string; role: string; created_by: string; created_at: string; expires_at: string | null }[];
      expect(items.filter((t) => t.role === 'admin').map((t) => t.name)).toEqual(['admin', 'ops-alice', 'break-glass', 'vault']);
      const byName = Object.fromEntries(items.map((t) => [t.name, t]));
      const life = (t: { created_at: string; expires_at: string | null }) =>
        t.expires_at === null ? null : (Date.parse(t.expires_at) - Date.parse(t.created_at)) / 1000;
      expect(life(byName['ops-alice'])).toBe(90 * 86400);
      expect(life(byName.vault)).toBeNull();
      expect(life(byName.hourly)).toBe(3600);
      expect(byName['ops-alice'].created_by).toBe('coordinator-cli');
      expect(byName.admin.created_by).toBe('coordinator');
      const events = (await client.get('/v1/ledger/events?after=0&limit=100')).body.items as {
        type: string;
        data: { name: string };
        meta: { actor: string };
      }[];
      expect(events.filter((e) => e.type === 'api_token_created' && e.data.name === 'ops-alice').map((e) => e.meta.actor)).toEqual(['coordinator-cli']);
    } finally {
      await running.stop();
    }
  });

  it('does not let a coordinator killed with SIGKILL block the next start', async () => {
    const killed = await startCoordinatorProcess({ dataDir });
    await stopChild(killed.child, 'the coordinator', 'SIGKILL');
    const next = await startCoordinatorProcess({ dataDir });
    try {
      expect((await fetch(`${next.url}/readyz`)).status).toBe(200);
      const refused = coordinator(dataDir, 'verify');
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(`(pid ${next.child.pid})`);
    } finally {
      await next.stop();
    }
    const verified = coordinator(dataDir, 'verify');
    expect(verified.status).toBe(0);
  });
});
