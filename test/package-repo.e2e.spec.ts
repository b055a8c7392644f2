import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as openpgp from 'openpgp';
import { sha256Hex } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client, expectProblem, STACK_TRACE } from './support/http.js';
import { RETECTL, runRetectl, type RetectlRun } from './support/retectl-process.js';

jest.setTimeout(600_000);

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];
const HELLO = 'florete-fixture-repo-hello';
const NEEDS = 'florete-fixture-repo-needs-hello';
/** Small, so the over-limit upload is refused without sending megabytes. */
const PACKAGE_LIMIT = 256 * 1024;

/** A .deb built by the real dpkg-deb, root-owned like a distribution's. */
function buildDeb(work: string, control: Record<string, string>, files: Record<string, string>, compression?: 'gzip' | 'xz'): string {
  const root = mkdtempSync(join(work, 'pkg-'));
  mkdirSync(join(root, 'DEBIAN'));
  writeFileSync(
    join(root, 'DEBIAN', 'control'),
    `${Object.entries(control)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n')}\n`,
  );
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  const out = `${root}.deb`;
  execFileSync('dpkg-deb', ['--root-owner-group', ...(compression ? [`-Z${compression}`] : []), '--build', root, out], { stdio: 'pipe' });
  chmodSync(out, 0o644);
  return out;
}

const run = (cmd: string, args: string[]): Promise<{ code: number; out: string }> =>
  new Promise((done) => {
    execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' } }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });

const installedVersion = (name: string): string | null => {
  try {
    const v = execFileSync('dpkg-query', ['-W', '-f=${Status} ${Version}', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return v.startsWith('install ok installed ') ? v.slice('install ok installed '.length) : null;
  } catch {
    return null;
  }
};

/** The real apt, reading only this test's source list, lists and cache: the machine's own are never touched. */
function isolatedApt(dir: string) {
  mkdirSync(join(dir, 'lists', 'partial'), { recursive: true });
  mkdirSync(join(dir, 'cache', 'archives', 'partial'), { recursive: true });
  chmodSync(dir, 0o755);
  const options = [
    '-o',
    `Dir::Etc::sourcelist=${join(dir, 'sources.list')}`,
    '-o',
    'Dir::Etc::sourceparts=-',
    '-o',
    'APT::Get::List-Cleanup=0',
    '-o',
    `Dir::State::Lists=${join(dir, 'lists')}`,
    '-o',
    `Dir::Cache=${join(dir, 'cache')}`,
    '-o',
    'DPkg::Lock::Timeout=120',
  ];
  return {
    /** apt downloads as _apt: everything it reads must be world-readable. */
    source(line: string) {
      writeFileSync(join(dir, 'sources.list'), `${line}\n`, { mode: 0o644 });
      chmodSync(join(dir, 'sources.list'), 0o644);
    },
    update: () => run('apt-get', [...options, 'update']),
    install: (...pkgs: string[]) => run('apt-get', [...options, 'install', '-y', '--no-install-recommends', ...pkgs]),
    /** Removes what is installed of these, waiting for the dpkg lock other work may hold. */
    async purge(...names: string[]) {
      const present = names.filter((n) => installedVersion(n) !== null);
      if (present.length === 0) return;
      if (!existsSync(join(dir, 'sources.list'))) writeFileSync(join(dir, 'sources.list'), '', { mode: 0o644 });
      const r = await run('apt-get', [...options, 'purge', '-y', ...present]);
      if (r.code !== 0) throw new Error(`apt-get purge ${present.join(' ')} failed:\n${r.out}`);
    },
  };
}

/** The key as retectl prints it, byte for byte (runRetectl decodes stdout as text). */
const keyBytes = (url: string, armor = false): Promise<Buffer> =>
  new Promise((done, fail) => {
    execFile(
      process.execPath,
      [RETECTL, 'package', 'key', ...(armor ? ['--armor'] : [])],
      { encoding: 'buffer', env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', FLORETE_COORDINATOR: url } },
      (error, stdout) => (error ? fail(error) : done(stdout)),
    );
  });

describe.each(targets)("the mesh's apt repository on $database", ({ database }) => {
  let coordinator: CoordinatorProcess;
  let work: string;
  let anon: Client;
  let publisher: Client;
  let publisherToken: string;
  let readerToken: string;
  let hello10: string;
  let hello11: string;
  let needs: string;
  let keyring: string;
  let purge: (...names: string[]) => Promise<void>;
  let databaseUrl: string | undefined;
  let dataDir: string;

  const retectl = (args: string[], token = publisherToken) => runRetectl(args, { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: token } });
  const expectOneLine = (r: RetectlRun, code: number, pattern: RegExp) => {
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code, stderr: expect.stringMatching(pattern) });
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr + r.stdout).not.toMatch(STACK_TRACE);
  };
  const head = async () => (await publisher.get('/v1/ledger/head')).body as { position: number; hash: string };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'florete-repo-e2e-'));
    chmodSync(work, 0o755);
    const cleaner = isolatedApt(join(work, 'apt-purge'));
    purge = (...names) => cleaner.purge(...names);
    await purge(NEEDS, HELLO);
    databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    dataDir = join(work, 'data');
    coordinator = await startCoordinatorProcess({ databaseUrl, dataDir, env: { FLORETE_PACKAGE_LIMIT: String(PACKAGE_LIMIT) } });
    anon = new Client(coordinator.url);
    const admin = anon.as(coordinator.adminToken);
    const token = async (role: string, name: string) => (await admin.post('/v1/api-tokens', { name, role })).body.token as string;
    publisherToken = await token('publisher', 'alice');
    readerToken = await token('reader', 'auditor');
    publisher = anon.as(publisherToken);
    const control = (version: string) => ({
      Package: HELLO,
      Version: version,
      Architecture: 'all',
      Maintainer: 'Florete tests <tests@florete.invalid>',
      Description: `says hello ${version}\n a fixture of the repository test`,
    });
    hello10 = buildDeb(work, control('1.0'), { [`usr/share/${HELLO}/hello`]: 'hello 1.0\n' });
    hello11 = buildDeb(work, control('1.1'), { [`usr/share/${HELLO}/hello`]: 'hello 1.1\n' }, 'gzip');
    needs = buildDeb(
      work,
      {
        Package: NEEDS,
        Version: '3.0',
        Architecture: 'all',
        Depends: `${HELLO} (>= 1.0)`,
        Maintainer: 'Florete tests <tests@florete.invalid>',
        Description: 'needs hello',
      },
      { [`usr/share/${NEEDS}/x`]: 'x\n' },
    );
    keyring = join(work, 'florete.gpg');
  });

  afterAll(async () => {
    await purge?.(NEEDS, HELLO);
    await coordinator?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('takes a push with the publisher role, reading name, version and architecture from the package; a second push of the same file records nothing', async () => {
    const pushed = await retectl(['package', 'push', hello10]);
    expect(pushed.stderr).toBe('');
    expect(pushed.stdout).toMatch(new RegExp(`^pushed ${HELLO} 1\\.0 \\(all\\), \\d+ bytes, sha256 [0-9a-f]{12} at ledger position \\d+\\n$`));
    const before = await head();
    const again = await retectl(['package', 'push', hello10]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^already in the repository: ${HELLO} 1\\.0 \\(all\\), .* pushed by alice at ledger position ${before.position}\\n$`),
    );
    expect(await head()).toEqual(before);

    // A gzip-compressed package (dpkg-deb -Zgzip) and one with dependencies, as JSON.
    const json = JSON.parse((await retectl(['package', 'push', hello11, '--json'])).stdout);
    expect(json).toEqual({
      created: true,
      package: expect.objectContaining({
        name: HELLO,
        version: '1.1',
        architecture: 'all',
        sha256: sha256Hex(readFileSync(hello11)),
        actor: 'alice',
        filename: `pool/${sha256Hex(readFileSync(hello11))}.deb`,
      }),
    });
    expect((await retectl(['package', 'push', needs])).code).toBe(0);
  });

  it('lists the packages in push order, with who pushed each, as a table and as JSON', async () => {
    const table = await retectl(['package', 'list'], readerToken);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['NAME', 'VERSION', 'ARCH', 'SIZE', 'PUSHED', 'BY', 'SHA256']);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      [HELLO, '1.0', 'all'],
      [HELLO, '1.1', 'all'],
      [NEEDS, '3.0', 'all'],
    ]);
    expect(lines.slice(1).every((l) => l.split(/\s+/)[5] === 'alice')).toBe(true);
    const { items } = JSON.parse((await retectl(['package', 'list', '--json'], readerToken)).stdout);
    expect(items.map((p: { sha256: string }) => p.sha256)).toEqual([hello10, hello11, needs].map((f) => sha256Hex(readFileSync(f))));
    expect(items[0]).toEqual({
      name: HELLO,
      version: '1.0',
      architecture: 'all',
      sha256: expect.any(String),
      size: readFileSync(hello10).length,
      filename: expect.stringMatching(/^pool\/[0-9a-f]{64}\.deb$/),
      actor: 'alice',
      position: expect.any(Number),
      pushed_at: expect.any(String),
    });
  });

  it('signs the indices once per push, not per request, and keeps its key and its Release across a restart', async () => {
    const get = async (file: string) => Buffer.from(await (await fetch(`${coordinator.url}/repo/debian/${file}`)).arrayBuffer());
    const inRelease = await get('InRelease');
    // Every OpenPGP.js signature carries a random salt: the same bytes twice mean one signature, served twice.
    expect(await get('InRelease')).toEqual(inRelease);
    expect(await get('Release.gpg')).toEqual(await get('Release.gpg'));
    const [release, key] = [await get('Release'), await get('key.gpg')];
    const keyFile = join(dataDir, 'keys', 'repo-signing-key.asc');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyFile, 'utf8')).toMatch(/^-----BEGIN PGP PRIVATE KEY BLOCK-----/);

    await coordinator.stop();
    coordinator = await startCoordinatorProcess({ databaseUrl, dataDir, env: { FLORETE_PACKAGE_LIMIT: String(PACKAGE_LIMIT) } });
    anon = new Client(coordinator.url);
    publisher = anon.as(publisherToken);
    expect(await get('key.gpg')).toEqual(key);
    // Dated with the last push, so a restart (or another replica) renders the same Release.
    expect(await get('Release')).toEqual(release);
  });

  it('prints the signing key as the repository serves it: binary for signed-by=….gpg, armored with --armor', async () => {
    const binary = await keyBytes(coordinator.url);
    expect(binary).toEqual(Buffer.from(await (await fetch(`${coordinator.url}/repo/debian/key.gpg`)).arrayBuffer()));
    expect(binary.subarray(0, 1).toString('latin1')).not.toBe('-');
    writeFileSync(keyring, binary, { mode: 0o644 });
    const armored = (await keyBytes(coordinator.url, true)).toString('utf8');
    expect(armored).toMatch(/^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
    expect(armored).toBe(await (await fetch(`${coordinator.url}/repo/debian/key.asc`)).text());
  });

  it('is installed from by stock apt: update verifies InRelease, install gets the version asked for with its dependencies, and purge removes it', async () => {
    const apt = isolatedApt(join(work, 'apt'));
    apt.source(`deb [signed-by=${keyring}] ${coordinator.url}/repo/debian/ ./`);
    const update = await apt.update();
    expect({ code: update.code, out: update.out }).toEqual({ code: 0, out: expect.stringContaining('InRelease') });
    expect(update.out).not.toMatch(/^(W|E): /m);
    const install = await apt.install(`${HELLO}=1.0`);
    expect({ code: install.code, out: install.out }).toEqual({ code: 0, out: expect.stringContaining(`Setting up ${HELLO} (1.0)`) });
    expect(installedVersion(HELLO)).toBe('1.0');
    expect(readFileSync(`/usr/share/${HELLO}/hello`, 'utf8')).toBe('hello 1.0\n');
    // A package whose Depends the index carries: apt upgrades hello to satisfy it from the same repository.
    const withDeps = await apt.install(NEEDS, `${HELLO}=1.1`);
    expect(withDeps.code).toBe(0);
    expect([installedVersion(NEEDS), installedVersion(HELLO)]).toEqual(['3.0', '1.1']);
    await purge(NEEDS, HELLO);
    expect([installedVersion(NEEDS), installedVersion(HELLO)]).toEqual([null, null]);
    expect(existsSync(`/usr/share/${HELLO}/hello`)).toBe(false);

    // The armored key works for signed-by=….asc.
    const asc = join(work, 'florete.asc');
    writeFileSync(asc, await keyBytes(coordinator.url, true), { mode: 0o644 });
    const armoredApt = isolatedApt(join(work, 'apt-asc'));
    armoredApt.source(`deb [signed-by=${asc}] ${coordinator.url}/repo/debian/ ./`);
    expect((await armoredApt.update()).code).toBe(0);
  });

  it('is refused by apt when InRelease was tampered with, or signed by a key the node does not hold', async () => {
    // A man in the middle that changes one hash in what the signatures cover (InRelease, and Release beside Release.gpg).
    const proxy: Server = createServer((req, res) => {
      void (async () => {
        const upstream = await fetch(`${coordinator.url}${req.url}`);
        let body = Buffer.from(await upstream.arrayBuffer());
        if (req.url?.endsWith('Release')) body = Buffer.from(body.toString('utf8').replace(/^ ([0-9a-f])/m, (_m, c: string) => ` ${c === '0' ? '1' : '0'}`));
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream' });
        res.end(body);
      })();
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const port = (proxy.address() as AddressInfo).port;
      const tampered = isolatedApt(join(work, 'apt-tampered'));
      tampered.source(`deb [signed-by=${keyring}] http://127.0.0.1:${port}/repo/debian/ ./`);
      const update = await tampered.update();
      expect(update.out).toMatch(/BADSIG|signatures were invalid|not signed/);
      expect((await tampered.install(`${HELLO}=1.0`)).code).not.toBe(0);
      expect(installedVersion(HELLO)).toBeNull();
    } finally {
      await new Promise((r) => proxy.close(r));
    }

    const stranger = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'not the mesh' }], format: 'binary' });
    const strangerKeyring = join(work, 'stranger.gpg');
    writeFileSync(strangerKeyring, (await openpgp.readKey({ binaryKey: stranger.publicKey })).write(), { mode: 0o644 });
    const wrongKey = isolatedApt(join(work, 'apt-wrong-key'));
    wrongKey.source(`deb [signed-by=${strangerKeyring}] ${coordinator.url}/repo/debian/ ./`);
    const update = await wrongKey.update();
    expect(update.out).toMatch(/NO_PUBKEY|not signed/);
    expect((await wrongKey.install(`${HELLO}=1.0`)).code).not.toBe(0);
    expect(installedVersion(HELLO)).toBeNull();
  });

  it('refuses a bad package, another content for a pushed version, a wrong content type, a reader, and an oversized upload, recording nothing', async () => {
    const before = await head();
    const listed = (await publisher.get('/v1/packages')).body.items.length;

    const junk = join(work, 'junk.deb');
    writeFileSync(junk, 'this is not a Debian package\n');
    expectOneLine(
      await retectl(['package', 'push', junk]),
      1,
      /^retectl: the coordinator rejected the request: not a Debian package the repository can serve: not a Debian package: it does not start with the ar archive signature .* \(422 invalid_deb\)\n$/,
    );

    const forged = buildDeb(
      work,
      { Package: HELLO, Version: '1.0', Architecture: 'all', Maintainer: 'Mallory <m@florete.invalid>', Description: 'not the real 1.0' },
      { [`usr/share/${HELLO}/hello`]: 'forged\n' },
    );
    expectOneLine(
      await retectl(['package', 'push', forged]),
      1,
      new RegExp(
        `^retectl: ${HELLO} 1\\.0 \\(all\\) is already in the repository with other content \\(sha256 [0-9a-f]{64}, pushed at ledger position \\d+\\): a version is pushed once; build the change as a new version \\(409 package_conflict\\)\\n$`,
      ),
    );

    expectOneLine(
      await retectl(['package', 'push', hello10], readerToken),
      1,
      /^retectl: the API token's role may not do this: uploads need an API token with the publisher role or above \(403 forbidden\)\n$/,
    );
    expectOneLine(await retectl(['package', 'push', join(work, 'missing.deb')]), 1, /^retectl: cannot read .*missing\.deb: ENOENT\n$/);

    const bytes = readFileSync(hello10);
    const sha = sha256Hex(bytes);
    expectProblem(
      await publisher.request('PUT', `/v1/packages/${sha}`, { raw: bytes, headers: { 'content-type': 'application/json' } }),
      415,
      'unsupported_media_type',
    );
    expectProblem(
      await publisher.request('PUT', `/v1/packages/${sha}`, { raw: bytes, headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
    );
    expectProblem(
      await publisher.request('PUT', `/v1/packages/${'0'.repeat(64)}`, { raw: bytes, headers: { 'content-type': 'application/octet-stream' } }),
      422,
      'digest_mismatch',
    );
    expectProblem(
      await anon.request('PUT', `/v1/packages/${sha}`, { raw: bytes, headers: { 'content-type': 'application/octet-stream' } }),
      401,
      'unauthenticated',
    );
    const big = Buffer.alloc(PACKAGE_LIMIT + 1);
    const tooLarge = await publisher.request('PUT', `/v1/packages/${sha256Hex(big)}`, { raw: big, headers: { 'content-type': 'application/octet-stream' } });
    expectProblem(tooLarge, 413, 'body_too_large');
    expect(tooLarge.body.detail).toMatch(new RegExp(`at most ${PACKAGE_LIMIT}`));

    expect(await head()).toEqual(before);
    expect((await publisher.get('/v1/packages')).body.items).toHaveLength(listed);
  });

  it('serves only package files from the pool, never other blobs', async () => {
    const artifact = await publisher.putBlob('{"secret":"a node config"}\n');
    expectProblem(await anon.get(`/repo/debian/pool/${artifact}.deb`), 404, 'not_found');
    expectProblem(await anon.get('/repo/debian/pool/..%2F..%2Fetc%2Fpasswd'), 404, 'not_found');
    expectProblem(await anon.get('/repo/debian/Sources'), 404, 'not_found');
    const sha = sha256Hex(readFileSync(hello10));
    const deb = await fetch(`${coordinator.url}/repo/debian/pool/${sha}.deb`);
    expect(deb.status).toBe(200);
    expect(sha256Hex(Buffer.from(await deb.arrayBuffer()))).toBe(sha);
    expect((await fetch(`${coordinator.url}/repo/debian/pool/${sha}.deb`, { headers: { 'if-none-match': `"${sha}"` } })).status).toBe(304);
  });

  it('keeps every push in the hash chain: ledger verify and audit verify pass, and the events name who pushed what', async () => {
    const verify = await retectl(['ledger', 'verify'], readerToken);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout)).toEqual(expect.objectContaining({ ok: true }));

    const events = (await publisher.get('/v1/ledger/events?after=0&limit=1000')).body.items as {
      type: string;
      stream: string;
      data: Record<string, unknown>;
      meta: Record<string, unknown>;
    }[];
    const pushes = events.filter((e) => e.type === 'package_pushed');
    expect(pushes.map((e) => [e.stream, e.data.version, e.meta.actor])).toEqual([
      [`package:${HELLO}`, '1.0', 'alice'],
      [`package:${HELLO}`, '1.1', 'alice'],
      [`package:${NEEDS}`, '3.0', 'alice'],
    ]);
    expect(pushes[0].data).toEqual({
      name: HELLO,
      version: '1.0',
      architecture: 'all',
      sha256: sha256Hex(readFileSync(hello10)),
      size: readFileSync(hello10).length,
      control: expect.stringMatching(new RegExp(`^Package: ${HELLO}\\nVersion: 1\\.0\\n`)),
    });

    // The mirror holds set changes only; it follows the ledger past the pushes and still verifies.
    const deadline = Date.now() + 30_000;
    while ((await anon.get('/readyz')).body.mirror.lag !== 0) {
      if (Date.now() > deadline) throw new Error('the mirror did not catch up');
      await new Promise((r) => setTimeout(r, 100));
    }
    const audit = await retectl(['audit', 'verify'], readerToken);
    expect(audit.code).toBe(0);
    expect(JSON.parse(audit.stdout)).toEqual(expect.objectContaining({ ok: true, mirror: expect.objectContaining({ commits: 0, lag: 0 }) }));
  });
});

describe('retectl init', () => {
  it('writes the two resources that point a node at the repository, and says how to fetch the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'florete-init-repo-'));
    try {
      const rete = join(dir, 'rete');
      const init = await runRetectl(['init', rete]);
      expect(init.code).toBe(0);
      expect(init.stdout).toContain('retectl package key > files/florete.gpg, then uncomment repository.yaml');
      const example = readFileSync(join(rete, 'repository.yaml'), 'utf8');
      expect(example).toContain('#       - path: /etc/apt/sources.list.d/florete.list');
      expect(example).toContain('deb [signed-by=/usr/share/keyrings/florete.gpg] https://coordinator.example.net/repo/debian/ ./');
      expect(example).toContain('#         source: files/florete.gpg');
      expect((await runRetectl(['validate', '-C', rete])).code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
