import { generateKeyPairSync } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson, keyThumbprint, setDigest, sha256Hex, signBundle, signCheckpoint, signTrustDocument, type SigningKey } from '#bundle';
import { AgentConfig, type ReportRequest, type TrustKey } from '#contracts';
import type { LogLevel } from '#runtime';
import { createActivator } from './activator.js';
import { SET_JWS, StateDir } from './state-dir.js';
import { SyncPass } from './sync-pass.js';

/**
 * The sync pass on the real filesystem, against a loopback HTTP server that answers the node-facing
 * calls the way the coordinator does (bundle with ETag and checkpoint header, 304, the trust chain,
 * reports), with bundles signed by the project's own signing code. Activation is a real shell command
 * that appends the version it was given to a log, and fails for a set whose flor.json says so.
 */

const NODE = 'alpha';
const ORIGIN = 'florete-sync-pass-test';
/** Every crafted bundle is stamped below this ledger position, so the checkpoint vouches for it. */
const CHECKPOINT_POSITION = 1000;
const CHECKPOINT_SIGNED_AT = Date.parse('2026-11-30T09:30:00Z');

type Files = Record<string, string>;

interface Key extends SigningKey {
  readonly jwk: TrustKey;
}

async function newKey(kid?: string): Promise<Key> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const thumbprint = await keyThumbprint({ kty: 'OKP', crv: 'Ed25519', x });
  return { kid: kid ?? thumbprint, privateKey, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid: kid ?? thumbprint, alg: 'EdDSA', use: 'sig' } };
}

function bundle(version: number, files: Files, key: Key): Promise<string> {
  const artifacts = Object.entries(files).map(([name, content]) => ({
    name,
    sha256: sha256Hex(content),
    size: Buffer.byteLength(content),
    content: Buffer.from(content).toString('base64'),
  }));
  const payload = {
    node: NODE,
    version,
    set_digest: setDigest(artifacts),
    position: 100 + version,
    publish_id: `p${version}`,
    issued_at: '2026-11-30T10:00:00.000Z',
    retired: false,
    artifacts,
  };
  return signBundle(Buffer.from(canonicalJson(payload), 'utf8'), key);
}

interface Served {
  readonly jws: string;
  readonly etag: string;
}

/** The coordinator's node-facing routes, as small as the pass needs them. */
class FakeCoordinator {
  served: Served | null = null;
  readonly reports: ReportRequest[] = [];
  /** `GET /v1/nodes/alpha/bundle` requests, with the If-None-Match each sent (null: unconditional). */
  readonly bundleFetches: (string | null)[] = [];
  private server!: Server;
  url = '';

  constructor(
    private readonly trustDocument: string,
    private readonly checkpoint: string,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.answer(req).then(({ status, headers, body }) => {
        res.writeHead(status, headers);
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async answer(req: IncomingMessage): Promise<{ status: number; headers: Record<string, string>; body?: string }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    // The trust chain is public; the node's own routes want its credential.
    if (url.pathname.startsWith('/v1/nodes/') && req.headers.authorization !== 'Bearer node-secret') {
      return { status: 401, headers: { 'content-type': 'application/problem+json' }, body: '{"code":"unauthorized","detail":"no such credential"}' };
    }
    const checkpoint = { 'florete-checkpoint': Buffer.from(this.checkpoint, 'utf8').toString('base64') };
    if (req.method === 'GET' && url.pathname === `/v1/nodes/${NODE}/bundle`) {
      const tag = req.headers['if-none-match'];
      this.bundleFetches.push(typeof tag === 'string' ? tag : null);
      if (!this.served)
        return { status: 404, headers: { 'content-type': 'application/problem+json' }, body: '{"code":"unknown_node","detail":"nothing published"}' };
      if (tag === this.served.etag) return { status: 304, headers: { etag: this.served.etag, ...checkpoint } };
      return { status: 200, headers: { 'content-type': 'application/jose', etag: this.served.etag, ...checkpoint }, body: this.served.jws };
    }
    if (req.method === 'GET' && url.pathname === '/v1/trust') {
      const after = Number(url.searchParams.get('after') ?? 0);
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ head: 1, versions: after < 1 ? [{ version: 1, document: this.trustDocument }] : [] }),
      };
    }
    if (req.method === 'POST' && url.pathname === `/v1/nodes/${NODE}/reports`) {
      this.reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReportRequest);
      return { status: 204, headers: {} };
    }
    return { status: 404, headers: {}, body: 'not here' };
  }
}

/** Every file under `root` with its bytes, and every symlink with its target: what "nothing changed" compares. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = lstatSync(path);
      const rel = path.slice(root.length + 1);
      if (st.isSymbolicLink()) out[rel] = `-> ${readlinkSync(path)}`;
      else if (st.isDirectory()) walk(path);
      else out[rel] = `${st.ino}:${st.mtimeMs}:${readFileSync(path, 'utf8')}`;
    }
  };
  walk(root);
  return out;
}

describe('SyncPass against a loopback coordinator', () => {
  let key: Key;
  let checkpointNote: string;
  let trustDocument: string;
  let root: string;
  let installDir: string;
  let activations: string;
  let dir: StateDir;
  let coordinator: FakeCoordinator;
  let logged: { level: LogLevel; msg: string; fields?: Record<string, unknown> }[];
  /** The passes' clock: half an hour after the checkpoint was signed, fresh under the default max_staleness, whatever the day the suite runs. */
  let clock: Date;

  const one: Files = { 'flor.json': '{"set":"one"}\n', 'agent.json': '{"poll_interval":3600}\n', 'extra.conf': 'only in one\n' };
  const two: Files = { 'flor.json': '{"set":"two"}\n', 'agent.json': '{"poll_interval":3600}\n' };

  /** A pass wired as the daemon wires it, with the activation command given. */
  const pass = (activation = `printf '%s\\n' "$FLORETE_SET_VERSION" >> '${activations}'`) => {
    const config = AgentConfig.parse({
      install: { dir: installDir },
      request_timeout_seconds: 5,
      activation: {
        kind: 'command',
        // A set whose flor.json says "fail-to-start" is refused, with output, as a broken vertex config would be.
        command: `if grep -q fail-to-start "$FLORETE_ACTIVE_DIR/flor.json"; then echo "vertex refuses set $FLORETE_SET_VERSION" >&2; exit 3; fi; ${activation}`,
      },
    });
    return new SyncPass(
      dir,
      config,
      createActivator(config.activation),
      (level, msg, fields) => logged.push({ level, msg, fields }),
      () => clock,
    );
  };
  const serve = async (version: number, files: Files, signer: Key = key) => {
    coordinator.served = { jws: await bundle(version, files, signer), etag: `"v${version}"` };
    return coordinator.served.jws;
  };
  const activated = () => (existsSync(activations) ? readFileSync(activations, 'utf8').split('\n').filter(Boolean).map(Number) : []);
  const installed = (name: string) => readFileSync(join(installDir, name), 'utf8');
  /** Applies version 1, as the starting point of most cases. */
  const applyOne = async () => {
    await serve(1, one);
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 1 });
    coordinator.reports.length = 0;
    coordinator.bundleFetches.length = 0;
  };

  beforeAll(async () => {
    key = await newKey();
    trustDocument = signTrustDocument({ version: 1, keys: [key.jwk], revoked: [], issued_at: '2026-11-30T09:00:00.000Z', previous: null }, key);
    checkpointNote = signCheckpoint(
      { origin: ORIGIN, position: CHECKPOINT_POSITION, hash: 'ab'.repeat(32), time: new Date(CHECKPOINT_SIGNED_AT).toISOString(), trustVersion: 1 },
      key,
    );
  });

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'flor-sync-pass-'));
    installDir = join(root, 'etc');
    activations = join(root, 'activations.log');
    logged = [];
    clock = new Date(CHECKPOINT_SIGNED_AT + 30 * 60_000);
    coordinator = new FakeCoordinator(trustDocument, checkpointNote);
    await coordinator.start();
    dir = new StateDir(join(root, 'state'));
    dir.ensure();
    dir.writeIdentity({
      coordinator: coordinator.url,
      node: NODE,
      credential: 'node-secret',
      pinned_jwks: { keys: [key.jwk] },
      enrolled_at: '2026-11-30T09:00:00.000Z',
    });
  });

  afterEach(async () => {
    await coordinator.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('applies a first version: stages it, installs it, switches to it, activates it, records and reports it', async () => {
    await serve(1, one);
    const outcome = await pass().run(false);
    expect(outcome).toEqual({ dry_run: false, was: 0, active_version: 1, version: 1, contactFailed: false, result: 'applied', code: null, reason: null });
    // Staged whole under its final name, with the JWS it was verified from.
    expect(readdirSync(dir.setsDir)).toEqual(['1']);
    expect(readdirSync(dir.setDir(1)).sort()).toEqual([SET_JWS, 'agent.json', 'extra.conf', 'flor.json']);
    expect(readFileSync(join(dir.setDir(1), SET_JWS), 'utf8')).toBe(`${coordinator.served!.jws}\n`);
    expect(readlinkSync(dir.activeLink)).toBe('sets/1');
    for (const [name, content] of Object.entries(one)) expect(installed(name)).toBe(content);
    expect(activated()).toEqual([1]);
    expect(dir.readInstalled()).toEqual({
      complete_version: 1,
      files: Object.fromEntries(Object.entries(one).map(([n, c]) => [join(installDir, n), sha256Hex(c)])),
    });
    expect(dir.readState()).toMatchObject({
      high_water: 1,
      applied_version: 1,
      etag: '"v1"',
      last_result: 'applied',
      last_error: null,
      unapplied: null,
      activations: [{ version: 1, activation: 'restart', at: expect.any(String) }],
    });
    // The trust version walked to and the checkpoint verified are kept for the next pass.
    expect(dir.readTrust()).toMatchObject({ version: 1, keys: [key.jwk], revoked: [] });
    expect(dir.readCheckpoint()).toMatchObject({ position: CHECKPOINT_POSITION, origin: ORIGIN, note: checkpointNote });
    expect(coordinator.bundleFetches).toEqual([null]);
    expect(coordinator.reports).toEqual([
      {
        active_version: 1,
        result: 'applied',
        installed: Object.keys(one)
          .map((n) => join(installDir, n))
          .sort(),
        activation: { path: 'restart' },
        checkpoint: checkpointNote,
        agent_version: expect.any(String),
      },
    ]);
  });

  it('is up to date on a 304: asks with the ETag it holds, stages, installs and activates nothing, reports up to date', async () => {
    await applyOne();
    const sets = tree(dir.setsDir);
    const etc = tree(installDir);
    const installedJson = readFileSync(dir.installedPath, 'utf8');
    const outcome = await pass().run(false);
    expect(outcome).toEqual({ dry_run: false, was: 1, active_version: 1, version: 1, contactFailed: false, result: 'up_to_date', code: null, reason: null });
    expect(coordinator.bundleFetches).toEqual(['"v1"']);
    expect(tree(dir.setsDir)).toEqual(sets);
    expect(tree(installDir)).toEqual(etc);
    expect(readFileSync(dir.installedPath, 'utf8')).toBe(installedJson);
    expect(readlinkSync(dir.activeLink)).toBe('sets/1');
    expect(activated()).toEqual([1]);
    expect(dir.readState()).toMatchObject({
      applied_version: 1,
      high_water: 1,
      last_result: 'up_to_date',
      activations: [expect.objectContaining({ version: 1 })],
    });
    expect(coordinator.reports).toEqual([{ active_version: 1, result: 'up_to_date', checkpoint: checkpointNote, agent_version: expect.any(String) }]);
  });

  it('reports since when it is stale once the newest checkpoint it holds is older than max_staleness, and keeps the active set', async () => {
    await applyOne();
    clock = new Date(CHECKPOINT_SIGNED_AT + 86_400_000 + 1000);
    expect(await pass().run(false)).toMatchObject({ result: 'up_to_date', active_version: 1 });
    expect(readlinkSync(dir.activeLink)).toBe('sets/1');
    expect(coordinator.reports).toEqual([
      {
        active_version: 1,
        result: 'up_to_date',
        checkpoint: checkpointNote,
        stale_since: new Date(CHECKPOINT_SIGNED_AT + 86_400_000).toISOString(),
        agent_version: expect.any(String),
      },
    ]);
  });

  it('refuses a replayed older version: the active set, its files and the mark stay, the report names no target', async () => {
    const jwsOne = await serve(1, one);
    await pass().run(false);
    await serve(2, two);
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 2 });
    coordinator.reports.length = 0;
    const before = { sets: tree(dir.setsDir), etc: tree(installDir), installed: readFileSync(dir.installedPath, 'utf8') };

    coordinator.served = { jws: jwsOne, etag: '"v1-again"' };
    const outcome = await pass().run(false);
    expect(outcome).toEqual({
      dry_run: false,
      was: 2,
      active_version: 2,
      version: 1,
      contactFailed: false,
      result: 'rejected',
      code: 'replayed',
      reason: 'version 1 is older than the high-water mark 2 (replayed bundle)',
    });
    expect({ sets: tree(dir.setsDir), etc: tree(installDir), installed: readFileSync(dir.installedPath, 'utf8') }).toEqual(before);
    expect(readlinkSync(dir.activeLink)).toBe('sets/2');
    expect(activated()).toEqual([1, 2]);
    // A replay is not news of a newer version: nothing is recorded as unapplied.
    expect(dir.readState()).toMatchObject({
      high_water: 2,
      applied_version: 2,
      etag: '"v2"',
      last_result: 'rejected',
      last_error: outcome.reason,
      unapplied: null,
    });
    expect(coordinator.reports).toEqual([
      {
        active_version: 2,
        result: 'rejected',
        error: 'version 1: version 1 is older than the high-water mark 2 (replayed bundle)',
        checkpoint: checkpointNote,
        agent_version: expect.any(String),
      },
    ]);
  });

  it('refuses the version it applied sent with another set, as after a restore that lost it: nothing moves, and a newer version is applied', async () => {
    await applyOne();
    await serve(2, two);
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 2 });
    coordinator.reports.length = 0;
    const before = { sets: tree(dir.setsDir), etc: tree(installDir), installed: readFileSync(dir.installedPath, 'utf8') };

    // Version 2 again, with version 1's files: another history of this node's versions (its stamp event, and so its ETag, differ too).
    coordinator.served = { jws: await bundle(2, one, key), etag: '"v2-restored"' };
    const outcome = await pass().run(false);
    expect(outcome).toMatchObject({ was: 2, active_version: 2, version: 2, result: 'rejected', code: 'version_conflict' });
    expect(outcome.reason).toMatch(
      /^version 2 is sent with set digest [0-9a-f]{12}…, but the version 2 this node applied has [0-9a-f]{12}…: the ledger lost the version applied here/,
    );
    expect({ sets: tree(dir.setsDir), etc: tree(installDir), installed: readFileSync(dir.installedPath, 'utf8') }).toEqual(before);
    expect(readlinkSync(dir.activeLink)).toBe('sets/2');
    expect(activated()).toEqual([1, 2]);
    expect(dir.readState()).toMatchObject({ high_water: 2, applied_version: 2, last_result: 'rejected', last_error: outcome.reason });
    // Its version 2 is named as the one refused, so the coordinator does not count this node as running the ledger's version 2.
    expect(coordinator.reports).toEqual([
      expect.objectContaining({ active_version: 2, result: 'rejected', target_version: 2, error: `version 2: ${outcome.reason}` }),
    ]);
    // The same set under the same version is the version applied: up to date, as before.
    await serve(2, two);
    expect(await pass().run(false)).toMatchObject({ result: 'up_to_date', active_version: 2 });
    // A newer version is applied.
    await serve(3, one);
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 3 });
    expect(installed('flor.json')).toBe(one['flor.json']);
  });

  it('refuses a bundle whose signature does not verify under the trusted key: nothing moves, the rejection is kept and reported without a version', async () => {
    await applyOne();
    const before = { state: tree(dir.root), etc: tree(installDir) };
    // Another key under the trusted key's kid: the signature is checked against the trusted one.
    const jws = await serve(2, two, await newKey(key.kid));
    const outcome = await pass().run(false);
    expect(outcome).toEqual({
      dry_run: false,
      was: 1,
      active_version: 1,
      version: null,
      contactFailed: false,
      result: 'rejected',
      code: 'bad_signature',
      reason: 'signature does not verify',
    });
    expect(tree(installDir)).toEqual(before.etc);
    const after = tree(dir.root);
    // Only the state file changed; no set was staged, `active` did not move.
    expect(Object.keys(after).filter((k) => after[k] !== before.state[k])).toEqual(['state.json']);
    expect(existsSync(dir.setDir(2))).toBe(false);
    expect(activated()).toEqual([1]);
    expect(dir.readState()).toMatchObject({
      high_water: 1,
      applied_version: 1,
      last_result: 'rejected',
      last_error: 'signature does not verify',
      unapplied: { version: null, reason: 'rejected', detail: 'bad_signature: signature does not verify' },
    });
    expect(coordinator.reports).toEqual([
      { active_version: 1, result: 'rejected', error: 'signature does not verify', checkpoint: checkpointNote, agent_version: expect.any(String) },
    ]);
    // The genuine bundle of the same version still applies afterwards.
    expect(jws).not.toBe(await serve(2, two));
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 2 });
  });

  it('reports a failed activation against the new version while the applied version stays the previous one, and retries it on the next pass', async () => {
    await applyOne();
    const broken: Files = { ...two, 'flor.json': '{"set":"two","fail-to-start":true}\n' };
    await serve(2, broken);
    const outcome = await pass().run(false);
    // `active` already names set 2 (the switch comes before activation, so the next pass finishes it); the outcome says so.
    expect(outcome).toEqual({
      dry_run: false,
      was: 1,
      active_version: 2,
      version: 2,
      contactFailed: false,
      result: 'failed',
      code: 'activation_failed',
      reason: 'restart command exited with 3: vertex refuses set 2',
    });
    expect(readlinkSync(dir.activeLink)).toBe('sets/2');
    expect(activated()).toEqual([1]);
    // What runs is still version 1: the state and the report say so, and no activation of 2 is recorded.
    expect(dir.readState()).toMatchObject({
      high_water: 2,
      applied_version: 1,
      last_result: 'failed',
      last_error: outcome.reason,
      unapplied: { version: 2, reason: 'failed', detail: outcome.reason },
      activations: [expect.objectContaining({ version: 1 })],
    });
    expect(coordinator.reports).toEqual([
      {
        active_version: 1,
        target_version: 2,
        result: 'failed',
        error: 'restart command exited with 3: vertex refuses set 2',
        installed: Object.keys(broken)
          .map((n) => join(installDir, n))
          .sort(),
        checkpoint: checkpointNote,
        agent_version: expect.any(String),
      },
    ]);
    // The previous set stays on disk to go back to.
    expect(readdirSync(dir.setsDir).sort()).toEqual(['1', '2']);

    // Not settled: the next pass fetches whole even though it holds the ETag, and tries version 2 again.
    coordinator.reports.length = 0;
    const again = await pass().run(false);
    expect(coordinator.bundleFetches.at(-1)).toBeNull();
    expect(again).toMatchObject({ result: 'failed', version: 2, code: 'activation_failed' });
    expect(dir.readState().applied_version).toBe(1);
    expect(coordinator.reports).toEqual([expect.objectContaining({ active_version: 1, target_version: 2, result: 'failed' })]);
  });

  it('removes an installed file the new set no longer has, and keeps the rest', async () => {
    await applyOne();
    expect(installed('extra.conf')).toBe('only in one\n');
    await serve(2, two);
    expect(await pass().run(false)).toMatchObject({ result: 'applied', version: 2, was: 1 });
    expect(existsSync(join(installDir, 'extra.conf'))).toBe(false);
    expect(readdirSync(installDir).sort()).toEqual(['agent.json', 'flor.json']);
    expect(installed('flor.json')).toBe(two['flor.json']);
    expect(dir.readInstalled()).toEqual({
      complete_version: 2,
      files: { [join(installDir, 'agent.json')]: sha256Hex(two['agent.json']), [join(installDir, 'flor.json')]: sha256Hex(two['flor.json']) },
    });
    expect(coordinator.reports).toEqual([
      expect.objectContaining({ active_version: 2, result: 'applied', installed: [join(installDir, 'agent.json'), join(installDir, 'flor.json')] }),
    ]);
  });

  it('a dry run says what it would apply and changes nothing: no file, no set, no state, no report, no activation', async () => {
    await applyOne();
    const before = { state: tree(dir.root), etc: tree(installDir) };
    await serve(2, two);
    const outcome = await pass().run(true);
    expect(outcome).toEqual({ dry_run: true, was: 1, active_version: 1, version: 2, contactFailed: false, result: 'would_apply', code: null, reason: null });
    expect(tree(dir.root)).toEqual(before.state);
    expect(tree(installDir)).toEqual(before.etc);
    expect(activated()).toEqual([1]);
    expect(coordinator.reports).toEqual([]);
    expect(coordinator.bundleFetches).toEqual(['"v1"']);
  });

  it('a dry run on a fresh node writes no trust or checkpoint either', async () => {
    await serve(1, one);
    const before = tree(dir.root);
    expect(await pass().run(true)).toMatchObject({ dry_run: true, result: 'would_apply', version: 1, active_version: 0 });
    expect(tree(dir.root)).toEqual(before);
    expect(existsSync(installDir)).toBe(false);
    expect(coordinator.reports).toEqual([]);
  });

  /** Version 2 staged as a pass leaves it before the switch: sets/2 complete with its JWS, its mark and ETag persisted. */
  async function stageTwo(): Promise<void> {
    const jws = await serve(2, two);
    mkdirSync(dir.setDir(2));
    for (const [name, content] of Object.entries(two)) writeFileSync(join(dir.setDir(2), name), content);
    writeFileSync(join(dir.setDir(2), SET_JWS), `${jws}\n`);
    dir.writeState({ ...dir.readState(), high_water: 2, etag: '"v2"' });
  }

  it('finishes a pass a crash interrupted after staging and persisting the mark, before the switch: fetches whole despite its ETag and applies', async () => {
    await applyOne();
    // What the pass leaves at that point: sets/2 complete under its final name, the mark and ETag of 2 persisted, `active` still on 1.
    await stageTwo();
    expect(readlinkSync(dir.activeLink)).toBe('sets/1');

    const outcome = await pass().run(false);
    // A 304 on the held ETag would leave version 2 accepted but never switched to.
    expect(coordinator.bundleFetches).toEqual([null]);
    expect(outcome).toEqual({ dry_run: false, was: 1, active_version: 2, version: 2, contactFailed: false, result: 'applied', code: null, reason: null });
    expect(readlinkSync(dir.activeLink)).toBe('sets/2');
    expect(activated()).toEqual([1, 2]);
    expect(existsSync(join(installDir, 'extra.conf'))).toBe(false);
    expect(dir.readState()).toMatchObject({ high_water: 2, applied_version: 2, etag: '"v2"', last_result: 'applied' });
    expect(dir.readInstalled().complete_version).toBe(2);
    expect(coordinator.reports).toEqual([expect.objectContaining({ active_version: 2, result: 'applied' })]);
  });

  it('finishes a pass a crash interrupted after the switch, before install and activation: installs, activates and removes what the old set had', async () => {
    await applyOne();
    await stageTwo();
    rmSync(dir.activeLink);
    // `active` on 2, installed.json and applied_version still on 1.
    symlinkSync(dir.setLinkTarget(2), dir.activeLink);

    const outcome = await pass().run(false);
    expect(coordinator.bundleFetches).toEqual([null]);
    expect(outcome).toEqual({ dry_run: false, was: 2, active_version: 2, version: 2, contactFailed: false, result: 'applied', code: null, reason: null });
    expect(activated()).toEqual([1, 2]);
    expect(installed('flor.json')).toBe(two['flor.json']);
    expect(existsSync(join(installDir, 'extra.conf'))).toBe(false);
    expect(dir.readState()).toMatchObject({ applied_version: 2, last_result: 'applied' });
    expect(dir.readInstalled().complete_version).toBe(2);
  });

  it('answers "not enrolled" without a request when the state dir has no identity', async () => {
    rmSync(dir.identityPath);
    const before = tree(dir.root);
    expect(await pass().run(false)).toMatchObject({ result: 'error', code: 'not_enrolled', contactFailed: false });
    expect(tree(dir.root)).toEqual(before);
    expect(coordinator.bundleFetches).toEqual([]);
  });
});
