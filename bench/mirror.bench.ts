/**
 * Mirror benchmark: commit time for a one-node change in a 10,000-node tree.
 * On a throwaway PostgreSQL it publishes a 10,000-node tree (agent.json + flor.json each) through
 * the ledger writer, then times the mirror worker's step (read the new events and blobs, build the
 * touched folder, the root tree and the commit, write the objects, move the branch and
 * info/refs, save the checkpoint) for:
 *   (a) the first commit, every folder new: the baseline, measured in the same run;
 *   (b) one node changed, --repeat times, a different node each time, with the worker warm;
 *   (c) the same after a restart (cold: the root tree is read back from the repository first).
 * It prints the objects each commit wrote (loose, plus those in the packs it added: a commit of 1,000
 * objects or more is written as a pack) and checks (b) wrote only the touched node's blobs
 * and the trees on its path: the new flor.json blob, the VERSION blob (unless another folder already
 * holds that version: blobs are shared), mgmt/ and <node>/ trees, the root and the commit: 5 or 6.
 * Beside each time it prints how long this thread's event loop was busy meanwhile (the rest is the
 * database, the file system and the mirror's own thread): what the polls and publishes a coordinator
 * answers during the step wait for.
 *
 *   npm run bench:mirror [-- --nodes 10000 --repeat 20]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sha256Hex } from '#bundle';
import { openDatabase } from '../apps/coordinator/src/db/connect.js';
import { migrateToLatest } from '../apps/coordinator/src/db/migrate.js';
import { SigningKeyStore } from '../apps/coordinator/src/core/signing-keys.js';
import { LedgerWriter } from '../apps/coordinator/src/ledger/ledger-writer.js';
import { ledgerBlobs } from '../apps/coordinator/src/bundles/blobs.repository.js';
import { ineligibleNodes } from '../apps/coordinator/src/fleet/ineligible.repository.js';
import { recordedPackages } from '../apps/coordinator/src/packages/packages.repository.js';
import { checkpointSigner } from '../apps/coordinator/src/trust/signing-trust.js';
import { ReadModelProjection } from '../apps/coordinator/src/projections/project.js';
import { PublishTreeHandler } from '../apps/coordinator/src/ledger/commands/publish-tree.handler.js';
import { PublishTreeCommand } from '../apps/coordinator/src/ledger/commands/publish-tree.command.js';
import { MirrorSync } from '../apps/coordinator/src/mirror/mirror-sync.js';
import { AuditRepo } from '../apps/coordinator/src/mirror/repo/audit-repo.js';
import { databaseCheckpoints } from '../apps/coordinator/src/mirror/store/checkpoint.js';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { parseCli } from './support/cli.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const say = (line: string) => process.stderr.write(`${line}\n`);
const nodeName = (i: number) => `node-${String(i + 1).padStart(5, '0')}`;
const agentJson = (i: number) => Buffer.from(`{\n  "node": "${nodeName(i)}",\n  "poll_interval_seconds": 30\n}\n`);
const florJson = (i: number, generation: number) =>
  Buffer.from(
    `{\n  "acl": [\n    {\n      "allow": "10.${(i >> 8) & 255}.${i & 255}.0/24"\n    }\n  ],\n  "generation": ${generation},\n  "node": "${nodeName(i)}"\n}\n`,
  );

/** Objects in the repository: loose files, plus the count each pack's index ends its fan-out table with. */
function looseObjects(gitdir: string): number {
  let n = 0;
  for (const d of readdirSync(join(gitdir, 'objects'))) if (/^[0-9a-f]{2}$/.test(d)) n += readdirSync(join(gitdir, 'objects', d)).length;
  const packs = join(gitdir, 'objects', 'pack');
  if (existsSync(packs)) for (const f of readdirSync(packs)) if (f.endsWith('.idx')) n += readFileSync(join(packs, f)).readUInt32BE(8 + 255 * 4);
  return n;
}

runBench('mirror.bench', async () => {
  const { values } = parseCli({ nodes: { type: 'string', default: '10000' }, repeat: { type: 'string', default: '20' } });
  const nodes = Number(values.nodes);
  const repeat = Number(values.repeat);
  if (!Number.isInteger(nodes) || nodes < 2 || !Number.isInteger(repeat) || repeat < 1 || repeat >= nodes)
    throw new UsageError('--nodes must be an integer ≥ 2 and --repeat an integer in [1, nodes)');

  say('starting a throwaway PostgreSQL');
  const pg = await startThrowawayPostgres();
  const db = await openDatabase({ databaseUrl: pg.url, dataDir: '/nonexistent' });
  onCleanup(() => db.close());
  await migrateToLatest(db.kysely);
  const dir = mkdtempSync(join(tmpdir(), 'florete-bench-mirror-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const keys = await SigningKeyStore.open(join(dir, 'signing-keys.json'));
  const writer = new LedgerWriter(db, keys, checkpointSigner(keys), ledgerBlobs, ineligibleNodes, recordedPackages);
  writer.projectInto(new ReadModelProjection());
  const publisher = new PublishTreeHandler(writer);
  const gitdir = join(dir, 'audit.git');

  const publish = async (files: Map<number, Buffer[]>, message: string) => {
    const blobs: { sha256: string; size: number; content: Buffer }[] = [];
    for (const contents of files.values()) for (const c of contents) blobs.push({ sha256: sha256Hex(c), size: c.length, content: c });
    for (let i = 0; i < blobs.length; i += 1000) {
      await db.kysely
        .insertInto('blobs')
        .values(blobs.slice(i, i + 1000))
        .onConflict((oc) => oc.column('sha256').doNothing())
        .execute();
    }
    const tree: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [i, [agent, flor]] of files) tree[nodeName(i)] = { artifacts: { 'agent.json': sha256Hex(agent), 'flor.json': sha256Hex(flor) } };
    const r = await publisher.execute(new PublishTreeCommand({ message, nodes: tree }, 'bench'));
    if (!r.publish_id) throw new Error(`publish "${message}" changed nothing`);
    return r;
  };

  say(`publishing a ${fmt(nodes)}-node tree`);
  const all = new Map<number, Buffer[]>();
  for (let i = 0; i < nodes; i++) all.set(i, [agentJson(i), florJson(i, 1)]);
  await publish(all, 'initial fleet');

  const timeStep = async (sync: MirrorSync) => {
    const before = looseObjects(gitdir);
    const loop = performance.eventLoopUtilization();
    const t0 = performance.now();
    const r = await sync.run(db.kysely);
    const elapsed = performance.now() - t0;
    const busy = performance.eventLoopUtilization(loop);
    if (r.commits !== 1) throw new Error(`expected one commit, the worker made ${r.commits}`);
    return { ms: elapsed, objects: looseObjects(gitdir) - before, loopMs: busy.active };
  };

  const repo = await AuditRepo.open(gitdir);
  const sync = new MirrorSync(repo, databaseCheckpoints);
  say('mirroring the first commit (every folder new)');
  const full = await timeStep(sync);

  const one = async (k: number, s: MirrorSync) => {
    const i = Math.floor((k * nodes) / (repeat + 1));
    await publish(new Map([[i, [agentJson(i), florJson(i, 2 + k)]]]), `change ${nodeName(i)}`);
    return timeStep(s);
  };
  say(`mirroring ${repeat} one-node publishes`);
  const warm = [];
  for (let k = 0; k < repeat; k++) warm.push(await one(k, sync));
  const coldRepo = await AuditRepo.open(gitdir);
  const cold = await one(repeat, new MirrorSync(coldRepo, databaseCheckpoints));
  await Promise.all([repo.close(), coldRepo.close()]);

  const wrongObjects = [...warm, cold].filter((s) => s.objects < 5 || s.objects > 6);
  if (wrongObjects.length) {
    process.stderr.write(`a one-node commit wrote ${wrongObjects.map((s) => s.objects).join(', ')} loose objects, expected 5 or 6\n`);
    process.exitCode = 1;
  }
  execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict', '--no-dangling'], { stdio: ['ignore', 'ignore', 'inherit'] });

  const m = median(warm.map((s) => s.ms));
  const rows = [
    [`first commit, ${fmt(nodes)} folders (baseline)`, ms(full.ms), fmt(full.objects), '1.00', ms(full.loopMs)],
    [
      `one node changed, warm (median of ${repeat})`,
      ms(m),
      fmt(median(warm.map((s) => s.objects))),
      (m / full.ms).toFixed(4),
      ms(median(warm.map((s) => s.loopMs))),
    ],
    ['one node changed, warm (max)', ms(Math.max(...warm.map((s) => s.ms))), '', '', ''],
    ['one node changed, cold (root read back)', ms(cold.ms), fmt(cold.objects), (cold.ms / full.ms).toFixed(4), ms(cold.loopMs)],
  ];
  process.stdout.write(`\nmirror commit time, ${fmt(nodes)}-node tree on PostgreSQL (git fsck --strict passed)\n\n`);
  process.stdout.write(`${formatTable(['commit', 'time', 'objects', 'ratio', 'event loop busy'], rows)}\n`);
});
