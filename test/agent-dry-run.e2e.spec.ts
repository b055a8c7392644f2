import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as jose from 'jose';
import type { AgentStatus, SyncOutcome } from '#contracts';
import { canonicalJson, setDigest, sha256Hex, signBundle, type SigningKey } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { startFrontProxy, type FrontProxy } from './fixtures/agent/front-proxy.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  startAgent,
  stopAllAgents,
  vertexStarts,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

/** Every entry under a folder with what would show a write: kind, mode, size, mtime, content digest, link target. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = lstatSync(path);
      const rel = path.slice(root.length + 1);
      if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(path)} ${st.mtimeMs}`;
      else if (st.isDirectory()) {
        out[rel] = `dir ${st.mode.toString(8)} ${st.mtimeMs}`;
        walk(path);
      } else if (st.isFile())
        out[rel] = `file ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
      else out[rel] = `other ${st.mode.toString(8)}`;
    }
  };
  if (existsSync(root)) walk(root);
  return out;
}

/** The coordinator's own active signing key, read from its data dir: for bundles it would sign but never serve. */
async function coordinatorKey(dataDir: string): Promise<SigningKey> {
  const file = JSON.parse(readFileSync(join(dataDir, 'keys/signing-keys.json'), 'utf8')) as { active: string; keys: { kid: string; private_jwk: jose.JWK }[] };
  const k = file.keys.find((x) => x.kid === file.active)!;
  return { kid: k.kid, privateKey: (await jose.importJWK(k.private_jwk, 'EdDSA')) as jose.CryptoKey };
}

/** A genuinely signed bundle whose flor.json does not match its digest: fails verification at the digest check, after the version is known. */
function badDigestBundle(node: string, version: number, key: SigningKey): Promise<string> {
  const files = { 'agent.json': agentJson(node, 3600), 'flor.json': florJson(node, 'three') };
  const artifacts = Object.entries(files).map(([name, content]) => ({
    name,
    sha256: sha256Hex(content),
    size: Buffer.byteLength(content),
    content: Buffer.from(content).toString('base64'),
  }));
  const payload = {
    node,
    version,
    set_digest: setDigest(artifacts),
    position: 1000 + version,
    publish_id: 'crafted',
    issued_at: new Date().toISOString(),
    retired: false,
    artifacts,
  };
  payload.artifacts[1].content = Buffer.from(florJson(node, 'evil')).toString('base64');
  return signBundle(Buffer.from(canonicalJson(payload), 'utf8'), key);
}

/**
 * `flor agent sync --dry-run` tells the truth and touches nothing, and `flor agent status` says when
 * the node is behind and why. Real processes: the built coordinator behind a small proxy (for a
 * bundle it would never serve), `flor agent run` supervising a stand-in vertex, the flor CLI.
 */
describe('flor agent: dry runs and nodes that are behind', () => {
  let coordinator: CoordinatorProcess;
  let proxy: FrontProxy;
  let fleet: Fleet;
  let files: AgentFiles;

  const sync = async (...extra: string[]): Promise<{ code: number; outcome: SyncOutcome }> => {
    const json = await flor(['agent', 'sync', ...extra, '--json', ...files.args]);
    expect(json.stderr).toBe('');
    return { code: json.code, outcome: JSON.parse(json.stdout) as SyncOutcome };
  };
  const status = async (): Promise<AgentStatus> => {
    const r = await flor(['agent', 'status', '--json', ...files.args]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(r.stdout) as AgentStatus;
  };
  const behindLine = async () => /^behind\s+(.*)$/m.exec((await flor(['agent', 'status', ...files.args])).stdout)?.[1];
  /** Everything a dry run must leave alone: the state dir (sets/, active, state.json, installed.json …), the installed files, the vertex. */
  const untouched = async () => {
    const s = await status();
    return { state: tree(files.stateDir), installed: tree(files.installDir), vertex: s.vertex, starts: vertexStarts(files) };
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    proxy = await startFrontProxy(coordinator.url);
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') } });
    files = agentFiles('supervise');
    expect((await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken('alpha'), ...files.args])).code).toBe(0);
    await startAgent(files);
    await waitFor('alpha at 1', async () => (await status()).applied_version === 1);
    await waitFor('the report of 1', async () => (await fleet.nodeStatus('alpha'))?.applied_version === 1);
  });

  afterAll(async () => {
    await stopAllAgents();
    await proxy?.close();
    await coordinator?.stop();
    if (files) removeTree(files.root);
  });

  it('is not behind when it runs what it was given', async () => {
    expect((await status()).behind).toBeNull();
    expect(await behindLine()).toBe('no');
    const dry = await sync('--dry-run');
    expect(dry).toMatchObject({ code: 0, outcome: { result: 'up_to_date', dry_run: true, version: 1, active_version: 1 } });
  });

  it('a dry run says would_apply with the active version and the one it would apply, and changes nothing', async () => {
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'two') } });
    const before = await untouched();
    expect(before.vertex).toEqual({ pid: expect.any(Number), starts: 1 });
    const reports = proxy.reports.length;

    const dry = await sync('--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.outcome).toEqual({ result: 'would_apply', dry_run: true, version: 2, was: 1, active_version: 1, reason: null, code: null });
    const text = await flor(['agent', 'sync', '--dry-run', ...files.args]);
    expect(text).toMatchObject({ code: 0, stdout: 'would apply 2 (active 1)\n', stderr: '' });

    expect(await untouched()).toEqual(before);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe('sets/1');
    expect(existsSync(join(files.stateDir, 'sets/2'))).toBe(false);
    expect(proxy.reports.length).toBe(reports);
    expect((await fleet.nodeStatus('alpha'))?.applied_version).toBe(1);
  });

  it('status says the node is behind because only a dry run saw the new version', async () => {
    const s = await status();
    expect(s.behind).toEqual({ seen_version: 2, active_version: 1, reason: 'dry_run', detail: null, seen_at: expect.any(String) });
    expect(s).toMatchObject({ active_version: 1, applied_version: 1 });
    expect(await behindLine()).toBe('version 2 seen, 1 in effect: seen by a dry run only (the next pass applies it)');
  });

  it('a dry run reports a bundle that fails verification as rejected, with the reason, and changes nothing', async () => {
    const before = await untouched();
    const reports = proxy.reports.length;
    proxy.mode = { kind: 'serve', jws: await badDigestBundle('alpha', 3, await coordinatorKey(coordinator.dataDir)) };
    try {
      const dry = await sync('--dry-run');
      expect(dry.code).toBe(1);
      expect(dry.outcome).toEqual({
        result: 'rejected',
        dry_run: true,
        version: 3,
        was: 1,
        active_version: 1,
        code: 'digest_mismatch',
        reason: expect.stringMatching(/^artifact flor\.json has sha256 [0-9a-f]{64} \(\d+ bytes\), the bundle says [0-9a-f]{64} \(\d+ bytes\)$/),
      });
      expect((await flor(['agent', 'sync', '--dry-run', ...files.args])).stdout).toMatch(/^rejected 3: artifact flor\.json has sha256 /);
      expect(await untouched()).toEqual(before);
      expect(proxy.reports.length).toBe(reports);

      // A real pass over the same bundle rejects it too, and from then on status names it.
      const real = await sync();
      expect(real.outcome).toMatchObject({ result: 'rejected', dry_run: false, version: 3, code: 'digest_mismatch' });
      expect((await status()).behind).toEqual({
        seen_version: 3,
        active_version: 1,
        reason: 'rejected',
        detail: expect.stringMatching(/^digest_mismatch: artifact flor\.json has sha256 /),
        seen_at: expect.any(String),
      });
      expect(await behindLine()).toMatch(/^version 3 seen, 1 in effect: rejected: digest_mismatch: artifact flor\.json has sha256 /);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('is no longer behind once a pass applies the newest version', async () => {
    expect(await sync()).toMatchObject({ code: 0, outcome: { result: 'applied', version: 2, was: 1 } });
    const s = await status();
    expect(s.behind).toBeNull();
    expect(s.vertex).toEqual({ pid: expect.any(Number), starts: 2 });
    expect(await behindLine()).toBe('no');
  });

  it('says behind, and why, when the new version failed to apply', async () => {
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'fail-to-start') } });
    const failed = await sync();
    expect(failed).toMatchObject({ code: 1, outcome: { result: 'failed', version: 3 } });
    const s = await status();
    // The set was switched to (active 3) but what is in effect is still 2.
    expect(s).toMatchObject({ active_version: 3, applied_version: 2 });
    expect(s.behind).toEqual({
      seen_version: 3,
      active_version: 2,
      reason: 'failed',
      detail: expect.stringContaining('fail-to-start'),
      seen_at: expect.any(String),
    });
    expect(await behindLine()).toMatch(/^version 3 seen, 2 in effect: its apply failed: vertex exited with 1 right after starting: .*fail-to-start/);

    // A dry run now says a real pass would try 3 again, and still touches nothing.
    const before = await untouched();
    expect(await sync('--dry-run')).toMatchObject({ code: 0, outcome: { result: 'would_apply', version: 3, was: 3, active_version: 3 } });
    expect(await untouched()).toEqual(before);
    expect((await status()).behind).toMatchObject({ seen_version: 3, reason: 'failed' });
  });
});
