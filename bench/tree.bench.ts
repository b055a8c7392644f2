/**
 * What the ledger's Merkle tree costs an answer at fleet size: an inclusion proof for one event and
 * a consistency proof from a recent tree, each as a coordinator would make it (its stored hashes read
 * from the database in one statement, then folded), at --entries events (a million by default). The
 * baseline, run in turns with it, is the cheapest read an answer makes: one stored hash by its key.
 * Prints each figure's median, the proof's size on the wire (base64), and the ratio to the baseline.
 *
 * The answers' tree headers are measured for nodes up to --behind entries behind (each figure in
 * turn), keeping only their tree's root or its frontier, with the share within 1,500 bytes.
 *
 *   npm run bench:tree [-- --entries 1000000 --rounds 200 --behind 1000,10000 --postgres]
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import {
  compactTreeCheckpoint,
  signCheckpoint,
  TREE_CHECKPOINT_HEADER,
  encodeStampLeaf,
  ledgerOrigin,
  signTreeCheckpoint,
  treeOrigin,
  appendLeaves,
  rootCoords,
  consistencyCoords,
  consistencyProof,
  inclusionCoords,
  inclusionProof,
  leafHash,
  type Coord,
} from '#bundle';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { migrateToLatest } from '../apps/coordinator/src/db/migrate.js';
import { readTreeHashes } from '../apps/coordinator/src/ledger/store/tree.js';
import { TreeMemory, TreeProofs, withStampLeaf } from '../apps/coordinator/src/bundles/tree-memory.js';
import * as jose from 'jose';
import { runBench, UsageError } from './support/cleanup.js';
import { parseCli } from './support/cli.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** Stores the tree of `n` random entries as the append path would, in batches, straight into ledger_tree. */
async function fill(db: Db, n: number): Promise<void> {
  const key = (c: Coord) => `${c.level}/${c.index}`;
  const kept = new Map<string, Uint8Array>();
  const BATCH = 20_000;
  for (let size = 0; size < n; size += BATCH) {
    const count = Math.min(BATCH, n - size);
    const made = appendLeaves(
      size,
      Array.from({ length: count }, () => leafHash(randomBytes(32))),
      (c) => kept.get(key(c))!,
    );
    for (const m of made) kept.set(key(m.coord), m.hash);
    for (let i = 0; i < made.length; i += 5000) {
      const slice = made.slice(i, i + 5000);
      await sql`INSERT INTO ledger_tree (level, idx, hash)
        SELECT l, i, decode(h, 'hex') FROM unnest(${sql.val(slice.map((m) => m.coord.level))}::smallint[], ${sql.val(slice.map((m) => m.coord.index))}::bigint[], ${sql.val(slice.map((m) => m.hash.toString('hex')))}::text[]) AS t(l, i, h)`.execute(
        db.kysely,
      );
    }
    // What a later batch can still need: the complete subtrees that make up the tree so far.
    const peaks = new Set(rootCoords(size + count).map(key));
    for (const k of [...kept.keys()]) if (!peaks.has(k)) kept.delete(k);
    if ((size / BATCH) % 10 === 0) say(`  ${fmt(size + count)} of ${fmt(n)} entries stored`);
  }
}

const p99 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))];

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

runBench('tree', async () => {
  const { values } = parseCli({
    entries: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '200' },
    postgres: { type: 'boolean', default: false },
    behind: { type: 'string', default: '1000,10000' },
  });
  const behinds = String(values.behind).split(',').map(Number);
  if (behinds.some((x) => !Number.isSafeInteger(x) || x < 1)) throw new UsageError('--behind must list whole numbers ≥ 1');
  const n = Number(values.entries);
  const rounds = Number(values.rounds);
  if (!Number.isSafeInteger(n) || n < 2) throw new UsageError('--entries must be a whole number ≥ 2');
  if (!Number.isInteger(rounds) || rounds < 1) throw new UsageError('--rounds must be a whole number ≥ 1');
  const db = values.postgres ? await openDatabase({ databaseUrl: (await startThrowawayPostgres()).url, dataDir: '/nonexistent' }) : await openMemoryDatabase();
  await migrateToLatest(db.kysely);
  say(`filling a tree of ${fmt(n)} entries on ${values.postgres ? 'PostgreSQL' : 'PGlite'}`);
  await fill(db, n);
  const base: number[] = [];
  const incl: number[] = [];
  const cons: number[] = [];
  let inclBytes = 0;
  let consBytes = 0;
  for (let r = 0; r < rounds; r++) {
    const leaf = Math.floor(Math.random() * n);
    const from = Math.max(1, n - 1 - Math.floor(Math.random() * 1000));
    base.push(await timed(() => db.kysely.selectFrom('ledger_tree').select('hash').where('level', '=', 0).where('idx', '=', leaf).executeTakeFirstOrThrow()));
    incl.push(
      await timed(async () => {
        const proof = inclusionProof(leaf, n, await readTreeHashes(db.kysely, inclusionCoords(leaf, n)));
        inclBytes = proof.map((p) => p.toString('base64')).join(',').length;
      }),
    );
    cons.push(
      await timed(async () => {
        const proof = consistencyProof(from, n, await readTreeHashes(db.kysely, consistencyCoords(from, n)));
        consBytes = proof.map((p) => p.toString('base64')).join(',').length;
      }),
    );
  }
  // Proofs on the wire: the answer's headers as the poll route makes them, from the tree in memory.
  const loadStart = process.hrtime.bigint();
  const memory = new TreeMemory(db.kysely);
  await memory.ensure(n);
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;
  const { privateKey } = await jose.generateKeyPair('Ed25519');
  // The ledger checkpoint and the tree checkpoint of one append, as the ledger signs them: same key, time, trust, size.
  const time = new Date().toISOString();
  const chain = randomBytes(32).toString('hex');
  const origin = ledgerOrigin('0'.repeat(64));
  const note = signTreeCheckpoint(
    { origin: treeOrigin(origin), size: n, root: memory.root(n).toString('hex'), time, trustVersion: 1, chain },
    { kid: 'bench', privateKey },
  );
  const chainNote = signCheckpoint({ origin, position: n, hash: chain, time, trustVersion: 1 }, { kid: 'bench', privateKey });
  // The tree checkpoint header as the poll route sends it beside that ledger checkpoint (its short form).
  const shortCheckpoint = compactTreeCheckpoint(note, chainNote);
  if (!shortCheckpoint) throw new Error('the tree checkpoint has no short form beside its ledger checkpoint');
  const sent = (h: Record<string, string>) => ({ ...h, [TREE_CHECKPOINT_HEADER]: shortCheckpoint });
  const proofs = new TreeProofs(memory);
  await proofs.ready(note);
  const leafHeader = encodeStampLeaf({ prev_hash: randomBytes(32).toString('hex'), revision: 12, meta: { actor: 'token:ops-ci' }, data: {} });
  const size = (h: Record<string, string>) => Object.entries(h).reduce((t, [k, v]) => t + k.length + v.length + 4, 0);
  const WITHIN = 1500;
  const within = (xs: readonly number[]) => `${fmt((100 * xs.filter((x) => x <= WITHIN).length) / xs.length)} %`;
  const bytes = (xs: readonly number[]) => `${fmt(median(xs))} B (max ${fmt(Math.max(...xs))})`;
  const b = median(base);
  const rows: string[][] = [
    ['one stored hash by its key (baseline)', ms(b), '-', '1.00×', '-'],
    ['inclusion proof of a random event', ms(median(incl)), `${fmt(inclBytes)} B`, `${fmt(median(incl) / b, 2)}×`, '-'],
    ['consistency proof from a tree ≤ 1,000 events older', ms(median(cons)), `${fmt(consBytes)} B`, `${fmt(median(cons) / b, 2)}×`, '-'],
  ];
  // Each node as far behind as a publish of that many nodes leaves it, keeping only its tree's root
  // (an agent of before frontiers: consistency proofs) or its frontier (extension proofs).
  for (const behind of behinds) {
    for (const keeps of [null, 'frontier'] as const) {
      const answer200: number[] = [];
      const answer304: number[] = [];
      const bytes200: number[] = [];
      const bytes200Old: number[] = [];
      const bytes304: number[] = [];
      for (let r = 0; r < rounds * 10; r++) {
        // Each 304 from another size: no proof cached, the worst case.
        const from = Math.max(1, n - 1 - Math.floor(Math.random() * behind));
        // A 200's stamp is newer than the tree its node held (it would have been given the bundle then
        // otherwise): between the held size and the checkpoint's. A stamp older than that (a node that
        // refused its bundle and polls again) is the other case, any leaf.
        const leaf = from + Math.floor(Math.random() * (n - from));
        const oldLeaf = Math.floor(Math.random() * n);
        const t0 = process.hrtime.bigint();
        const h200 = proofs.headers(note, { size: from, keeps }, leaf)!;
        const t1 = process.hrtime.bigint();
        const h304 = proofs.headers(note, { size: from - 1, keeps })!;
        const t2 = process.hrtime.bigint();
        answer200.push(Number(t1 - t0) / 1e6);
        answer304.push(Number(t2 - t1) / 1e6);
        bytes200.push(size(sent(withStampLeaf(h200, leafHeader))));
        bytes200Old.push(size(sent(withStampLeaf(proofs.headers(note, { size: from, keeps }, oldLeaf)!, leafHeader))));
        bytes304.push(size(sent(h304)));
      }
      const who = `≤ ${fmt(behind)} behind, keeping its ${keeps ?? 'root'}`;
      rows.push(
        [
          `200: tree headers, ${who} (p99)`,
          `${ms(median(answer200))} (${ms(p99(answer200))})`,
          bytes(bytes200),
          `${fmt(median(answer200) / b, 2)}×`,
          within(bytes200),
        ],
        [`200: a stamp older than the held tree, ${who}`, '-', bytes(bytes200Old), '-', within(bytes200Old)],
        [
          `304: tree headers, ${who} (p99)`,
          `${ms(median(answer304))} (${ms(p99(answer304))})`,
          bytes(bytes304),
          `${fmt(median(answer304) / b, 2)}×`,
          within(bytes304),
        ],
      );
    }
  }
  await db.close();
  say(`tree in memory: ${fmt(n)} leaves, ${fmt(memory.bytes / 1024 / 1024, 1)} MiB, loaded from ledger_tree in ${fmt(loadMs / 1000, 1)} s`);
  console.log(formatTable([`${fmt(n)} entries, median of ${rounds}`, 'per answer', 'on the wire', 'against one keyed read', `≤ ${fmt(WITHIN)} B`], rows));
});
