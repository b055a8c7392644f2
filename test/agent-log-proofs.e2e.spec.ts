import { existsSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as jose from 'jose';
import { decodeProof, decodeTreeProof, encodeTreeProof, expandTreeCheckpoint, parseTreeCheckpoint, signTreeCheckpoint, type SigningKey } from '#bundle';
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
  socketStatus,
  startAgent,
  stopAllAgents,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

/** The coordinator's own active signing key: a forger holding it can sign any tree, as a second coordinator with the same key would. */
function coordinatorKey(dataDir: string): Promise<SigningKey> {
  const file = JSON.parse(readFileSync(join(dataDir, 'keys/signing-keys.json'), 'utf8')) as { active: string; keys: { kid: string; private_jwk: jose.JWK }[] };
  const k = file.keys.find((x) => x.kid === file.active)!;
  return jose.importJWK(k.private_jwk, 'EdDSA').then((privateKey) => ({ kid: k.kid, privateKey: privateKey as jose.CryptoKey }));
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

describe('flor agent checks that its bundle is in the signed log, and that the log only grows', () => {
  let coordinator: CoordinatorProcess;
  let proxy: FrontProxy;
  let fleet: Fleet;
  let alpha: AgentFiles;
  let key: SigningKey;
  const files = (word: string) => ({ 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', word) });

  const sync = () => flor(['agent', 'sync', ...alpha.args]);
  const heldTree = () =>
    JSON.parse(readFileSync(join(alpha.stateDir, 'tree-checkpoint.json'), 'utf8')) as { size: number; root: string; note: string; frontier?: string[] };
  const snapshot = () => ({
    active: readlinkSync(join(alpha.stateDir, 'active')),
    flor: readFileSync(join(alpha.installDir, 'flor.json'), 'utf8'),
    highWater: JSON.parse(readFileSync(join(alpha.stateDir, 'state.json'), 'utf8')).high_water,
    tree: heldTree(),
  });

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    proxy = await startFrontProxy(coordinator.url);
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    key = await coordinatorKey(coordinator.dataDir);
    await fleet.publish({ alpha: files('one'), beta: { 'flor.json': florJson('beta', 'one') } });
    alpha = agentFiles('none', { request_timeout_seconds: 5 });
    expect((await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken('alpha'), ...alpha.args])).code).toBe(0);
    await startAgent(alpha);
  });

  afterAll(async () => {
    await stopAllAgents();
    await proxy?.close();
    await coordinator?.stop();
    if (alpha) removeTree(alpha.root);
  });

  it('verifies every answer: inclusion of each new version, consistency from the tree it held to the next', async () => {
    // The daemon's first pass may have applied it already.
    expect((await sync()).stdout).toMatch(/^(applied 1\b|up to date at 1\n)/);
    let held = heldTree();
    expect(held.size).toBeGreaterThan(0);
    for (const word of ['two', 'three', 'four']) {
      const before = held;
      // Other nodes' publishes in between: the tree grows by more than alpha's own stamps.
      await fleet.publish({ beta: { 'flor.json': florJson('beta', `${word}-b`) } });
      await fleet.publish({ alpha: files(word) });
      const polls = proxy.polls.length;
      expect((await sync()).stdout).toMatch(/^applied \d+ \(was \d+\)\n$/);
      held = heldTree();
      // It told the coordinator the size it held and that it keeps that tree's frontier, and moved to a
      // larger tree by the extension proof from there, keeping the new tree's frontier.
      expect(proxy.polls[polls]['florete-tree-size']).toBe(String(before.size));
      expect(proxy.polls[polls]['florete-tree-keeps']).toBe('frontier');
      expect(held.size).toBeGreaterThan(before.size);
      expect(held.frontier?.length).toBe(held.size.toString(2).replace(/0/g, '').length);
    }
    // An idle poll: a 304, its checkpoint and an empty proof from the size held.
    expect((await sync()).stdout).toMatch(/^up to date at 4\n$/);
    expect(heldTree().size).toBe(held.size);
  });

  it('refuses a new version whose inclusion proof is tampered with: not_in_log, the active set left running', async () => {
    const before = snapshot();
    await fleet.publish({ alpha: files('five') });
    const reports = proxy.reports.length;
    proxy.mode = {
      kind: 'rewrite',
      headers: (h) => {
        // In the proof header of a node that keeps its frontier, after the extension proof.
        const parts = decodeTreeProof(h['florete-tree-proof']);
        const proof = decodeProof(parts.inclusion!, 'inclusion');
        // The hashes the extension proof does not show; none at all when it shows the whole path: then one too many.
        if (proof.hashes.length > 0) proof.hashes[0][0] ^= 1;
        else proof.hashes.push(Buffer.alloc(32, 7));
        return { ...h, 'florete-tree-proof': encodeTreeProof(parts.extension, `${proof.n} ${Buffer.concat(proof.hashes).toString('base64')}`, parts.leaf) };
      },
    };
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd() }).toEqual({
        code: 1,
        line: expect.stringMatching(/^rejected 5: version 5 stamped at position \d+ is not in the signed tree/),
      });
      expect(snapshot()).toEqual(before);
      expect(proxy.reports.slice(reports)).toEqual([
        {
          node: 'alpha',
          body: expect.objectContaining({ active_version: 4, result: 'rejected', target_version: 5, error: expect.stringContaining('not in the signed tree') }),
        },
      ]);
      expect(await socketStatus(alpha)).toEqual(expect.objectContaining({ active_version: 4, last_result: 'rejected' }));
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('refuses a new version with its proofs stripped, once it has seen them: proof_missing', async () => {
    const before = snapshot();
    proxy.mode = { kind: 'rewrite', headers: (h) => Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith('florete-tree-'))) };
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd() }).toEqual({
        code: 1,
        line: expect.stringMatching(/^rejected 5: the answer carries no tree checkpoint or proofs/),
      });
      expect(snapshot()).toEqual(before);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  /** The coordinator's answer with its tree checkpoint replaced by one the coordinator's key signs for another tree. */
  const forgedTree = (change: (c: ReturnType<typeof parseTreeCheckpoint>) => ReturnType<typeof parseTreeCheckpoint>) => ({
    kind: 'rewrite' as const,
    headers: (h: Record<string, string>) => ({
      ...h,
      // Sent whole: the short form would take its other lines from the genuine ledger checkpoint.
      'florete-tree-checkpoint': b64(
        signTreeCheckpoint(change(parseTreeCheckpoint(expandTreeCheckpoint(h['florete-tree-checkpoint'], unb64(h['florete-checkpoint'])))), key),
      ),
    }),
  });

  it('refuses a tree signed with the genuine key that does not extend the one held: checkpoint_fork', async () => {
    const before = snapshot();
    // Another history under the same key and origin: one more entry, another root.
    proxy.mode = forgedTree((c) => ({ ...c, size: c.size + 1, root: 'ab'.repeat(32), chain: 'cd'.repeat(32) }));
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd() }).toEqual({ code: 1, line: expect.stringMatching(/^rejected 5: .*the ledger was rewritten or forked/) });
      expect(snapshot()).toEqual(before);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    // The same size as held with another root is a fork too.
    proxy.mode = forgedTree((c) => ({ ...c, size: before.tree.size, root: 'ef'.repeat(32) }));
    try {
      expect((await sync()).stdout).toMatch(/^rejected 5: .*(forked|not in the signed tree)/);
      expect(snapshot()).toEqual(before);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('refuses a tree smaller than the one held: checkpoint_rollback', async () => {
    const before = snapshot();
    proxy.mode = forgedTree((c) => ({ ...c, size: before.tree.size - 1 }));
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd() }).toEqual({
        code: 1,
        line: expect.stringMatching(/^rejected 5: tree checkpoint of \d+ entries is smaller than the one held/),
      });
      expect(snapshot()).toEqual(before);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('applies the genuine answer after all that', async () => {
    expect((await sync()).stdout).toBe('applied 5 (was 4)\n');
    expect(existsSync(join(alpha.stateDir, 'tree-checkpoint.json'))).toBe(true);
  });

  it('refuses an extension proof that does not join its frontier to the new root: checkpoint_fork', async () => {
    await fleet.publish({ alpha: files('six') });
    const before = snapshot();
    proxy.mode = {
      kind: 'rewrite',
      headers: (h) => {
        const parts = decodeTreeProof(h['florete-tree-proof']);
        const proof = decodeProof(parts.extension, 'extension');
        proof.hashes[0][0] ^= 1;
        return { ...h, 'florete-tree-proof': encodeTreeProof(`${proof.n} ${Buffer.concat(proof.hashes).toString('base64')}`, parts.inclusion, parts.leaf) };
      },
    };
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd() }).toEqual({
        code: 1,
        line: expect.stringMatching(/^rejected 6: .*extension proof fails, the ledger was rewritten or forked/),
      });
      expect(snapshot()).toEqual(before);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    expect((await sync()).stdout).toBe('applied 6 (was 5)\n');
  });

  it('asks for the frontier when it holds only a root (an agent of before frontiers, or a frontier that does not make up its tree), checked by the consistency proof', async () => {
    for (const [word, version, frontier] of [
      ['seven', 7, undefined],
      ['eight', 8, ['00'.repeat(32)]],
    ] as const) {
      const held = heldTree();
      writeFileSync(join(alpha.stateDir, 'tree-checkpoint.json'), JSON.stringify({ ...held, frontier }));
      await fleet.publish({ beta: { 'flor.json': florJson('beta', word) } });
      await fleet.publish({ alpha: files(word) });
      const polls = proxy.polls.length;
      expect((await sync()).stdout).toBe(`applied ${version} (was ${version - 1})\n`);
      expect(proxy.polls[polls]).toEqual(expect.objectContaining({ 'florete-tree-size': String(held.size), 'florete-tree-keeps': 'root' }));
      const now = heldTree();
      expect(now.size).toBeGreaterThan(held.size);
      expect(now.frontier?.length).toBe(now.size.toString(2).replace(/0/g, '').length);
      // And from then on it says it keeps it.
      expect((await sync()).stdout).toBe(`up to date at ${version}\n`);
      expect(proxy.polls[proxy.polls.length - 1]['florete-tree-keeps']).toBe('frontier');
    }
  });
});
