import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { parseCheckpoint, tilePath } from '#bundle';
import { chainHash } from '../apps/coordinator/src/ledger/domain/hash-chain.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import { runRetectl, type RetectlRun } from './support/retectl-process.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, startAgent, stopAllAgents, waitFor, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(300_000);

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

type Rows = Record<string, unknown>[];
/** What an attacker with database access runs: plain SQL, no coordinator in the way. */
type Sql = (text: string, params?: unknown[]) => Promise<Rows>;

/** Opens the coordinator's database as an attacker would: the PostgreSQL server, or the embedded data dir while the coordinator is down. */
async function attackerSql(database: 'pglite' | 'postgres', url: string | undefined, dataDir: string): Promise<{ sql: Sql; close(): Promise<void> }> {
  if (database === 'postgres') {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return { sql: async (text, params) => (await client.query(text, params)).rows, close: () => client.end() };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(join(dataDir, 'db'));
  return { sql: async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows, close: () => db.close() };
}

/**
 * Changes the message of a recorded publish and re-chains every later event, so the ledger verifies
 * on its own again; the append-only trigger is switched off for it and back on after. Returns the
 * position rewritten.
 */
async function rewriteLedger(sql: Sql): Promise<number> {
  const [target] = await sql(`SELECT position FROM ledger WHERE type = 'publish_recorded' ORDER BY position LIMIT 1`);
  const from = Number(target.position);
  await sql('ALTER TABLE ledger DISABLE TRIGGER ledger_no_update_delete');
  await sql(`UPDATE ledger SET data = jsonb_set(data, '{message}', '"nothing happened here"') WHERE position = $1`, [from]);
  const [before] = await sql('SELECT hash FROM ledger WHERE position = $1', [from - 1]);
  let prev = before ? String(before.hash) : '0'.repeat(64);
  for (const row of await sql('SELECT * FROM ledger WHERE position >= $1 ORDER BY position', [from])) {
    const event = {
      position: Number(row.position),
      stream: String(row.stream),
      revision: Number(row.revision),
      type: String(row.type),
      data: row.data,
      meta: row.meta,
      recorded_at: new Date(row.recorded_at as string).toISOString(),
    };
    const hash = chainHash(prev, event);
    await sql('UPDATE ledger SET prev_hash = $1, hash = $2 WHERE position = $3', [prev, hash, event.position]);
    prev = hash;
  }
  await sql('ALTER TABLE ledger ENABLE TRIGGER ledger_no_update_delete');
  // A thorough attacker drops the Merkle tree too: the coordinator grows it anew over the rewritten chain.
  await sql('DELETE FROM ledger_tree');
  return from;
}

describe.each(targets)('signed checkpoints as an audit tool, on $database', ({ database }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'florete-audit-'));
  const work = mkdtempSync(join(tmpdir(), 'florete-auditor-'));
  const kept = join(work, 'kept.txt');
  const keptTree = join(work, 'kept-tree.txt');
  const tiles = join(work, 'tiles');
  let databaseUrl: string | undefined;
  let coordinator: CoordinatorProcess;
  let admin: Client;
  /** Printed on the first start only: kept for the restarted coordinator. */
  let adminToken: string;
  let alpha: AgentFiles;
  let beta: AgentFiles;
  let head: { position: number; hash: string };

  const start = (port?: string) =>
    startCoordinatorProcess({
      databaseUrl,
      dataDir,
      env: { FLORETE_CHECKPOINT_INTERVAL: '1', FLORETE_MIRROR_INTERVAL_MS: '100', ...(port ? { PORT: port } : {}) },
    });
  const audit = (...args: string[]): Promise<RetectlRun> =>
    runRetectl(['audit', ...args, '--coordinator', coordinator.url, '--token', adminToken, '--insecure-http'], { env: { GIT_CONFIG_GLOBAL: '/dev/null' } });
  const witnessesOf = async () =>
    (await admin.get('/v1/ledger/witnesses')).body as {
      coordinator: { position: number; hash: string };
      items: { node: string; position: number; hash: string; ledger_hash: string }[];
    };

  beforeAll(async () => {
    databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    coordinator = await start();
    adminToken = coordinator.adminToken!;
    admin = new Client(coordinator.url, adminToken);
    const fleet = new Fleet(admin);
    alpha = agentFiles('none');
    beta = agentFiles('none');
    for (const [node, files] of [
      ['alpha', alpha],
      ['beta', beta],
    ] as const) {
      expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(node), ...files.args])).code).toBe(0);
    }
    const tree = (marker: string) => ({
      alpha: { 'agent.json': agentJson('alpha', 1), 'flor.json': florJson('alpha', marker) },
      beta: { 'agent.json': agentJson('beta', 1), 'flor.json': florJson('beta', marker) },
    });
    await fleet.publish(tree('one'), 'first');
    await fleet.publish(tree('two'), 'second');
    head = (await admin.get('/v1/ledger/head')).body as { position: number; hash: string };
    await startAgent(alpha);
    await startAgent(beta);
    // Both agents hold the checkpoint of the head, and the mirror has caught up with it.
    await waitFor(
      'both agents witnessing the head',
      async () => {
        const w = await witnessesOf();
        return w.items.length === 2 && w.items.every((i) => i.position === head.position && i.hash === head.hash);
      },
      60_000,
    );
    await waitFor(
      'the mirror at the head',
      async () =>
        ((await admin.post('/v1/ledger/verify?mirror=true', {})).body as { mirror?: { lag: number; position: number } }).mirror?.position === head.position,
      60_000,
    );
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    for (const f of [alpha, beta]) if (f) removeTree(f.root);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it('prints the current checkpoint exactly as signed, and its fields with --json', async () => {
    const text = await audit('checkpoint');
    expect(text.code).toBe(0);
    writeFileSync(kept, text.stdout);
    const { checkpoint } = parseCheckpoint(text.stdout);
    expect({ position: checkpoint.position, hash: checkpoint.hash }).toEqual(head);
    const json = await audit('checkpoint', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ position: head.position, hash: head.hash, origin: checkpoint.origin, trust_version: 1 });
    const tree = await fetch(`${coordinator.url}/v1/ledger/tree/checkpoint`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(tree.headers.get('content-type')).toMatch(/^text\/plain/);
    const note = await tree.text();
    expect(note.split('\n').slice(0, 2)).toEqual([`${checkpoint.origin}/tree`, String(head.position)]);
    writeFileSync(keptTree, note);
  });

  it('verifies the Merkle tree from its tiles, from the coordinator and from a saved copy alone, and refuses a copy with one byte changed', async () => {
    const live = await audit('tree', '--since', keptTree, '--save', tiles);
    expect(live.stderr).toBe('');
    expect(live.stdout).toContain('verified: the tree is what its signed checkpoint says');
    expect(live.code).toBe(0);
    // No coordinator: the saved files are enough (the URL given leads nowhere).
    const offline = await runRetectl([
      'audit',
      'tree',
      '--from',
      tiles,
      '--since',
      keptTree,
      '--json',
      '--coordinator',
      'http://127.0.0.1:9',
      '--token',
      'x',
      '--insecure-http',
    ]);
    expect(JSON.parse(offline.stdout)).toMatchObject({ ok: true, checkpoint: { size: head.position }, since: { size: head.position }, disagreements: [] });
    expect(offline.code).toBe(0);
    const path = join(tiles, tilePath({ kind: 'hashes', level: 0, index: 0, width: Math.min(256, head.position) }));
    const bytes = readFileSync(path);
    bytes[0] ^= 1;
    writeFileSync(path, bytes);
    const tampered = await runRetectl(['audit', 'tree', '--from', tiles, '--coordinator', 'http://127.0.0.1:9', '--token', 'x', '--insecure-http']);
    expect(tampered.stdout).toMatch(/DISAGREES: (tiles|entries): /);
    expect(tampered.code).toBe(1);
  });

  it('passes an untampered ledger: the kept checkpoint, the mirror and the witnesses all agree', async () => {
    const verify = await audit('verify', '--checkpoint', kept, '--json');
    expect(verify.stderr).toBe('');
    const verdict = JSON.parse(verify.stdout);
    expect(verdict).toMatchObject({
      ok: true,
      ledger: { position: head.position, hash: head.hash, agrees: true },
      mirror: { at: { hash: head.hash, agrees: true }, first_disagreement: null },
      disagreements: [],
    });
    expect(verify.code).toBe(0);
    const text = await audit('verify', '--checkpoint', kept);
    expect(text.stdout).toContain('verified: the checkpoint is consistent with the ledger and the mirror');
    const witnesses = await audit('witnesses', '--json');
    expect(JSON.parse(witnesses.stdout)).toMatchObject({ ok: true, flags: [] });
    expect(witnesses.code).toBe(0);
  });

  it('catches a ledger row rewritten and re-chained in the database: the kept checkpoint, the mirror and the fleet each name it', async () => {
    await coordinator.stop();
    const attacker = await attackerSql(database, databaseUrl, dataDir);
    let rewritten: number;
    try {
      rewritten = await rewriteLedger(attacker.sql);
    } finally {
      await attacker.close();
    }
    coordinator = await start(new URL(coordinator.url).port);
    admin = new Client(coordinator.url, adminToken);
    // The chain verifies on its own: only what was kept outside the database can tell.
    const chain = (await admin.post('/v1/ledger/verify', {})).body as { ok: boolean; position: number; hash: string };
    expect(chain).toMatchObject({ ok: true, position: head.position });
    expect(chain.hash).not.toBe(head.hash);
    await waitFor(
      'a checkpoint signed over the rewritten head',
      async () => ((await admin.get('/v1/ledger/checkpoint')).body as { hash: string }).hash === chain.hash,
      30_000,
    );

    // (a) The kept checkpoint: the ledger at its position no longer has its hash.
    const verify = await audit('verify', '--checkpoint', kept, '--json');
    expect(verify.code).toBe(1);
    const verdict = JSON.parse(verify.stdout) as { ok: boolean; disagreements: { source: string; position: number; expected: string; found: string }[] };
    expect(verdict.ok).toBe(false);
    expect(verdict.disagreements).toContainEqual(
      expect.objectContaining({ source: 'ledger', position: head.position, expected: head.hash, found: chain.hash }),
    );
    // (b) The mirror: its commit for the rewritten publish records the old hash, and says where the ledger parted from it.
    const mirrored = verdict.disagreements.find((d) => d.source === 'mirror')!;
    expect(mirrored).toMatchObject({ position: rewritten!, found: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(mirrored.expected).not.toBe(mirrored.found);
    const text = await audit('verify', '--checkpoint', kept);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`ledger: DISAGREES at position ${head.position}: the checkpoint says ${head.hash}; the ledger has ${chain.hash}`);
    expect(text.stdout).toContain(`at or before position ${rewritten!}`);
    // The coordinator's own cross-check of its mirror fails too.
    expect((await audit('verify')).code).toBe(1);
    // (d) The Merkle tree: grown anew over the rewritten chain it is consistent with itself, but it does not extend the kept tree checkpoint.
    await waitFor('a tree checkpoint over the rewritten head', async () => (await audit('tree', '--json')).code === 0, 30_000);
    const tree = await audit('tree', '--since', keptTree);
    expect(tree.stdout).toContain('the tree now does not extend it: the ledger was rewritten');
    expect(tree.code).toBe(1);

    // (c) The fleet: the agents refuse the re-signed checkpoint as a fork and keep witnessing the old one.
    for (const node of ['alpha', 'beta']) {
      await waitFor(
        `${node} refusing the forked checkpoint`,
        async () => {
          const r = await admin.get(`/v1/nodes/${node}`);
          return typeof r.body.last_error === 'string' && r.body.last_error.includes('rewritten or forked') ? r : null;
        },
        60_000,
      );
    }
    const witnesses = await audit('witnesses', '--json');
    expect(witnesses.code).toBe(1);
    const flags = (
      JSON.parse(witnesses.stdout) as { flags: { kind: string; position: number; witness?: string; hashes?: { hash: string; witnesses: string[] }[] }[] }
    ).flags;
    expect(flags).toContainEqual({
      kind: 'fork',
      position: head.position,
      hashes: expect.arrayContaining([
        { hash: head.hash, witnesses: ['alpha', 'beta'] },
        { hash: chain.hash, witnesses: ['(coordinator)'] },
      ]),
    });
    expect(flags).toContainEqual({ kind: 'ledger', witness: 'alpha', position: head.position, held: head.hash, ledger: chain.hash });
    expect(flags).toContainEqual({ kind: 'ledger', witness: 'beta', position: head.position, held: head.hash, ledger: chain.hash });
    const table = await audit('witnesses');
    expect(table.stdout).toContain(`FORK at position ${head.position}`);
    expect(readFileSync(kept, 'utf8')).toContain(`\n${head.position}\n`);
  });
});
