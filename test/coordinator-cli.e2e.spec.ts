import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startCoordinatorProcess } from './support/coordinator-process.js';

const MAIN = resolve('dist/apps/coordinator/src/main.js');

/** The coordinator's local commands, run as the operator would on the coordinator host. */
function coordinator(dataDir: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, FLORETE_DATA: dataDir, FLORETE_LOG_LEVEL: 'warn' };
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
      const publish = await fetch(`${running.url}/v1/publishes`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"message":"x","nodes":{}}' });
      expect(publish.status).toBe(403);
    } finally {
      await running.stop();
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
});
