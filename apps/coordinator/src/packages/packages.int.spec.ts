import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '#bundle';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { DomainError } from '../common/index.js';
import { readBlobs } from '../bundles/index.js';
import { verifyLedger } from '../ledger/index.js';
import { readEvents } from '../ledger/index.js';
import { rebuildProjections } from '../projections/index.js';
import { MirrorSync } from '../mirror/mirror-sync.js';
import { AuditRepo } from '../mirror/repo/audit-repo.js';
import { databaseCheckpoints } from '../mirror/store/checkpoint.js';
import { verifyWithMirror } from '../mirror/verify-mirror.js';
import type { PushedPackage } from '../ledger/domain/package.decider.js';
import { listPackages } from './packages.repository.js';

const deb = (name: string, version: string, content: string): { pushed: PushedPackage; bytes: Buffer } => {
  const bytes = Buffer.from(content);
  return {
    bytes,
    pushed: {
      name,
      version,
      architecture: 'all',
      sha256: sha256Hex(bytes),
      size: bytes.length,
      control: `Package: ${name}\nVersion: ${version}\nArchitecture: all`,
    },
  };
};

describe.each(testDatabases)("the mesh's package repository on $name", (database) => {
  let h: LedgerHarness;
  let dir: string;

  beforeEach(async () => {
    h = await ledgerHarness(database);
    dir = mkdtempSync(join(tmpdir(), 'florete-packages-'));
  });
  afterEach(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const push = (d: { pushed: PushedPackage; bytes: Buffer }, actor = 'alice') => h.writer.pushPackage(d.pushed, d.bytes, actor);

  it('records a push in the hash chain with its actor, stores the file, and projects it', async () => {
    const hello = deb('florete-fixture-repo-hello', '1.0', 'hello 1.0');
    expect(await push(hello)).toEqual({ created: true, position: 1 });
    const [event] = await readEvents(h.db.kysely, 0, 10);
    expect(event).toEqual(
      expect.objectContaining({
        position: 1,
        stream: 'package:florete-fixture-repo-hello',
        revision: 1,
        type: 'package_pushed',
        data: hello.pushed,
        meta: { actor: 'alice' },
      }),
    );
    expect(await verifyLedger(h.db.kysely)).toEqual({ ok: true, position: 1, hash: event.hash });
    // Like every append, a push signs a checkpoint of the head it made.
    expect(Number((await h.db.kysely.selectFrom('ledger_checkpoint').select('position').where('id', '=', 1).executeTakeFirstOrThrow()).position)).toBe(1);
    expect((await readBlobs(h.db.kysely, [hello.pushed.sha256])).get(hello.pushed.sha256)).toEqual(new Uint8Array(hello.bytes));
    expect(await listPackages(h.db.kysely)).toEqual([
      expect.objectContaining({ name: hello.pushed.name, version: '1.0', sha256: hello.pushed.sha256, actor: 'alice', position: 1 }),
    ]);

    // Another version of the same package continues its stream.
    expect(await push(deb('florete-fixture-repo-hello', '1.1', 'hello 1.1'), 'bob')).toEqual({ created: true, position: 2 });
    expect((await readEvents(h.db.kysely, 1, 10))[0]).toEqual(
      expect.objectContaining({ stream: 'package:florete-fixture-repo-hello', revision: 2, meta: { actor: 'bob' } }),
    );
  });

  it('takes the same bytes again without recording anything, and refuses other bytes for the same version', async () => {
    const hello = deb('florete-fixture-repo-hello', '1.0', 'hello 1.0');
    await push(hello);
    const head = await h.head();
    expect(await push(hello, 'bob')).toEqual({ created: false, position: 1 });
    const forged = deb('florete-fixture-repo-hello', '1.0', 'other bytes');
    await expect(push(forged)).rejects.toEqual(expect.objectContaining({ code: 'package_conflict' }));
    await expect(push(forged)).rejects.toBeInstanceOf(DomainError);
    expect(await h.head()).toEqual(head);
    // The refused file was not kept either.
    expect((await readBlobs(h.db.kysely, [forged.pushed.sha256])).size).toBe(0);
    expect(await listPackages(h.db.kysely)).toHaveLength(1);
  });

  it('lets one of two concurrent pushes of a version win; the other is refused, not recorded beside it', async () => {
    // PGlite has one connection, so this races for real on PostgreSQL only; both must hold either way.
    const a = deb('florete-fixture-repo-hello', '1.0', 'from a');
    const b = deb('florete-fixture-repo-hello', '1.0', 'from b');
    const results = await Promise.allSettled([push(a, 'alice'), push(b, 'bob')]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toEqual(expect.objectContaining({ code: 'package_conflict' }));
    expect(await listPackages(h.db.kysely)).toHaveLength(1);
    expect((await h.head()).position).toBe(1);
  });

  it('rebuilds the repository from the ledger like every other projection', async () => {
    await h.publish({ alpha: { 'flor.json': 'a\n' } });
    await push(deb('florete-fixture-repo-hello', '1.0', 'hello 1.0'));
    await h.publish({ alpha: { 'flor.json': 'a2\n' } });
    await push(deb('florete-fixture-repo-other', '2.0', 'other 2.0'), 'bob');
    const before = await listPackages(h.db.kysely);
    await h.db.kysely.deleteFrom('packages').execute();
    expect(await rebuildProjections(h.db.kysely)).toBe(6);
    expect(await listPackages(h.db.kysely)).toEqual(before);
  });

  it('leaves the audit mirror to set changes: a push makes no commit, and the mirror still verifies', async () => {
    const gitdir = join(dir, 'audit.git');
    const sync = async () => new MirrorSync(await AuditRepo.open(gitdir), databaseCheckpoints).run(h.db.kysely);
    await h.publish({ alpha: { 'flor.json': 'a\n' } });
    await push(deb('florete-fixture-repo-hello', '1.0', 'hello 1.0'));
    await h.publish({ alpha: { 'flor.json': 'a2\n' } });
    const last = await push(deb('florete-fixture-repo-hello', '1.1', 'hello 1.1'));
    const synced = await sync();
    expect(synced.commits).toBe(2);
    // The checkpoint follows the ledger past the last push, so the mirror shows no lag.
    expect(synced.checkpoint.position).toBe(last.position);
    const verdict = await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir));
    expect(verdict).toEqual(expect.objectContaining({ ok: true, position: last.position, mirror: expect.objectContaining({ commits: 2, lag: 0 }) }));
  });
});
