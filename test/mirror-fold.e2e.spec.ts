import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jest } from '@jest/globals';
import type { MirrorPublish } from '../apps/coordinator/src/mirror/domain/publish-group.js';

jest.setTimeout(120_000);

/** A built module of the mirror, typed by its source. */
const dist = <M>(path: string) => import(pathToFileURL(resolve(`dist/apps/coordinator/src/mirror/${path}`)).href) as Promise<M>;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Publishes and the bodies they name, the way the ledger gives them to the mirror. */
function publishes(): { list: MirrorPublish[]; blobs: Map<string, Uint8Array> } {
  const blobs = new Map<string, Uint8Array>();
  const body = (text: string) => {
    const b = Buffer.from(text);
    blobs.set(sha256(b), b);
    return { name: 'flor.json', sha256: sha256(b), size: b.length };
  };
  let position = 0;
  const publish = (stamps: { node: string; version: number; text?: string; retired?: boolean }[]): MirrorPublish => {
    position += stamps.length + 1;
    const id = `p-${position}`;
    return {
      position,
      hash: 'ab'.repeat(32),
      publishId: id,
      kind: 'publish',
      message: `publish ${position}`,
      actor: 'alice',
      recordedAt: '2026-01-02T03:04:05.678Z',
      changed: stamps.map((s) => ({ node: s.node, from: s.version - 1, to: s.version })),
      stamps: stamps.map((s) => ({
        node: s.node,
        version: s.version,
        set_digest: 'd'.repeat(64),
        retired: s.retired ?? false,
        artifacts: s.retired ? [] : [body(s.text ?? `${s.node} ${s.version}\n`)],
        publish_id: id,
      })),
    };
  };
  const nodes = Array.from({ length: 1200 }, (_, i) => `n${String(i).padStart(5, '0')}`);
  const list = [
    // Large enough for a pack of its own.
    publish(nodes.map((node) => ({ node, version: 1 }))),
    publish([
      { node: nodes[3], version: 2 },
      { node: nodes[700], version: 2, retired: true },
      // The same body as another node's: one blob for both.
      { node: nodes[9], version: 2, text: `${nodes[3]} 2\n` },
    ]),
    publish([
      { node: 'a-new-node', version: 1 },
      { node: 'b-new-node', version: 1 },
    ]),
    publish([{ node: nodes[5], version: 2 }]),
    publish([{ node: nodes[6], version: 2 }]),
    publish([{ node: nodes[8], version: 2 }]),
  ];
  return { list, blobs };
}

function looseCount(gitdir: string): number {
  let n = 0;
  for (const d of readdirSync(join(gitdir, 'objects'))) if (/^[0-9a-f]{2}$/.test(d)) n += readdirSync(join(gitdir, 'objects', d)).length;
  return n;
}

/**
 * The mirror's commits folded on the object writer's thread, as the built coordinator does it: the
 * same commits as the fold on the calling thread, the thread's tree kept between publishes and its
 * root sent again only when the thread has another, and a failed publish leaving no half-folded tree.
 */
describe('the mirror fold on the object writer thread, built', () => {
  const dir = mkdtempSync(join(tmpdir(), 'florete-mirror-fold-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gives the commits the calling thread gives, written where git reads them', async () => {
    const { ObjectWriter } = await dist<typeof import('../apps/coordinator/src/mirror/repo/object-writer.js')>('repo/object-writer.js');
    const { MirrorTree } = await dist<typeof import('../apps/coordinator/src/mirror/domain/mirror-tree.js')>('domain/mirror-tree.js');
    const { gitObject } = await dist<typeof import('../apps/coordinator/src/mirror/domain/git-object.js')>('domain/git-object.js');
    const { AuditRepo } = await dist<typeof import('../apps/coordinator/src/mirror/repo/audit-repo.js')>('repo/audit-repo.js');
    const { ThreadFold } = await dist<typeof import('../apps/coordinator/src/mirror/repo/mirror-fold.js')>('repo/mirror-fold.js');

    const { list, blobs } = publishes();
    const here = MirrorTree.empty();
    const expected = list.map((p) => here.apply(p, (sha) => gitObject('blob', Buffer.from(blobs.get(sha)!))).commit);

    const gitdir = join(dir, 'threaded.git');
    execFileSync('git', ['init', '-q', '--bare', gitdir]);
    let rootReads = 0;
    const repo = await AuditRepo.open(gitdir);
    // The content of a commit's root tree, as git stores it.
    const rootOf = async (commit: string) => {
      rootReads++;
      return new Uint8Array(execFileSync('git', ['--git-dir', gitdir, 'cat-file', 'tree', `${commit}^{tree}`]));
    };
    const oid = async (done: Promise<{ oid: string }>) => (await done).oid;
    const writer = new ObjectWriter(true, 300);
    try {
      // The first two publishes on one thread: its tree is kept, no root is read.
      let at: string | null = null;
      for (const p of list.slice(0, 2)) at = await oid(writer.commit(gitdir, at, p, blobs, true, () => rootOf(at!)));
      expect(at).toBe(expected[1]);
      expect(rootReads).toBe(0);
      execFileSync('git', ['--git-dir', gitdir, 'update-ref', 'refs/heads/main', at!]);
      execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict', '--no-dangling'], { stdio: 'ignore' });

      // A publish naming a body it was not sent with fails with the reason, and folds nothing: the same
      // publish with its bodies then gives the commit the calling thread gives, from a root read afresh.
      const partial = new Map(blobs);
      // The second stamp's body: the first one is folded by the time the thread finds it missing.
      partial.delete(list[2].stamps[1].artifacts[0].sha256);
      const loose = looseCount(gitdir);
      await expect(writer.commit(gitdir, at, list[2], partial, true, () => rootOf(at!))).rejects.toThrow(
        /did not come with the publish at 1208 sent to the thread/,
      );
      expect(looseCount(gitdir)).toBe(loose);
      at = await oid(writer.commit(gitdir, at, list[2], blobs, true, () => rootOf(at!)));
      expect(at).toBe(expected[2]);
      expect(rootReads).toBe(1);

      // A replay (not written) gives the commit and writes nothing.
      const written = looseCount(gitdir);
      expect(written).toBeGreaterThan(loose);
      const replayed = await writer.commit(gitdir, at, list[3], blobs, false, () => rootOf(at!));
      expect(replayed.oid).toBe(expected[3]);
      expect(looseCount(gitdir)).toBe(written);
      // With the commit comes its root tree's content, the very bytes git has for it once written.
      await writer.commit(gitdir, at, list[3], blobs, true, () => rootOf(at!));
      expect(Buffer.from(replayed.root).equals(Buffer.from(await rootOf(expected[3])))).toBe(true);
      expect(looseCount(gitdir)).toBeGreaterThan(written);
    } finally {
      await writer.close();
    }

    // A fold whose thread stops after idling hands the next thread the root it kept: only its first
    // commit reads the repository.
    const idling = new ObjectWriter(true, 200);
    try {
      rootReads = 0;
      const fold = new ThreadFold(idling, gitdir, expected[2], rootOf);
      expect(await fold.next(list[3], blobs, true)).toBe(expected[3]);
      expect(rootReads).toBe(1);
      await new Promise((r) => setTimeout(r, 800));
      expect((idling as unknown as { worker: unknown }).worker).toBeNull();
      expect(await fold.next(list[4], blobs, true)).toBe(expected[4]);
      expect(rootReads).toBe(1);
      // A thread being stopped (as the idle stop does, without waiting for it) as the next commit comes:
      // its exit fails none of the new thread's jobs, and the new thread is given the root.
      const stopping = idling.close();
      expect(await fold.next(list[5], blobs, true)).toBe(expected[5]);
      await stopping;
      expect(rootReads).toBe(1);
    } finally {
      await idling.close();
    }

    // What one thread's answer said of its tree is not taken for another's: after a stop, a thread
    // started by a plain write has no tree, so the next commit on the same base sends the root.
    const restarted = new ObjectWriter(true, 10_000);
    try {
      rootReads = 0;
      const first = await restarted.commit(gitdir, expected[2], list[3], blobs, false, () => rootOf(expected[2]));
      expect(first.oid).toBe(expected[3]);
      expect(rootReads).toBe(1);
      await restarted.close();
      await restarted.write(gitdir, [gitObject('blob', Buffer.from('a blob written alone\n'))]);
      const again = await restarted.commit(gitdir, expected[3], list[4], blobs, false, () => rootOf(expected[3]));
      expect(again.oid).toBe(expected[4]);
      expect(rootReads).toBe(2);
      // On the thread that answered it, the tree is kept.
      expect((await restarted.commit(gitdir, expected[4], list[5], blobs, false, () => rootOf(expected[4]))).oid).toBe(expected[5]);
      expect(rootReads).toBe(2);
    } finally {
      await restarted.close();
    }

    // The repository's own fold, on a thread started afresh: the root is read from the repository, and
    // the last commit is written whole.
    const fold = await repo.foldAt(expected[3]);
    expect(fold).toBeInstanceOf(ThreadFold);
    expect(await fold.next(list[4], blobs, true)).toBe(expected[4]);
    expect(fold.commit).toBe(expected[4]);
    await repo.close();
    execFileSync('git', ['--git-dir', gitdir, 'update-ref', 'refs/heads/main', expected[4]]);
    execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict', '--no-dangling'], { stdio: 'ignore' });
    expect(execFileSync('git', ['--git-dir', gitdir, 'rev-list', 'main'], { encoding: 'utf8' }).trim().split('\n')).toEqual(expected.slice(0, 5).reverse());
  });
});
