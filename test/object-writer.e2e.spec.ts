import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jest } from '@jest/globals';

jest.setTimeout(60_000);

type Obj = { type: 'blob' | 'tree' | 'commit'; oid: string; content: Uint8Array };
type Writer = { write(gitdir: string, objects: readonly Obj[]): Promise<void>; close(): Promise<void> };
type WriterClass = new (useThread?: boolean, idleMs?: number) => Writer;
const workerOf = (w: Writer) => (w as unknown as { worker: unknown }).worker;

const blob = (content: Buffer): Obj => ({ type: 'blob', oid: createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex'), content });

function looseFiles(gitdir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const dir of readdirSync(join(gitdir, 'objects'))) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const f of readdirSync(join(gitdir, 'objects', dir))) out.set(`${dir}${f}`, readFileSync(join(gitdir, 'objects', dir, f)));
  }
  return out;
}

/** The nice value of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function nicenessOfThreads(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

/**
 * The mirror's object writer as the built coordinator runs it (the compiled thread beside the
 * compiled writer): a batch handed to the thread lands on disk as the very files the calling
 * thread writes, readable by git, and a failing batch is refused with the reason.
 */
describe('the mirror object writer, built', () => {
  const dir = mkdtempSync(join(tmpdir(), 'florete-object-writer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a batch on its thread exactly as on the calling thread', async () => {
    const { ObjectWriter } = (await import(pathToFileURL(resolve('dist/apps/coordinator/src/mirror/repo/object-writer.js')).href)) as {
      ObjectWriter: WriterClass;
    };
    const objects = [
      ...Array.from({ length: 500 }, (_, i) => blob(Buffer.from(`${i}\n${randomBytes(i % 200).toString('hex')}`))),
      // One large object (over the size that switches to Huffman-only coding), and one already in the batch.
      blob(randomBytes(200 * 1024)),
      blob(Buffer.from('0\n')),
    ];
    const [threaded, here] = ['threaded.git', 'here.git'].map((name) => join(dir, name));
    for (const g of [threaded, here]) execFileSync('git', ['init', '-q', '--bare', g]);
    const thread = new ObjectWriter(true, 300);
    try {
      await thread.write(threaded, objects);
      // The thread was started and is still there for the next batch.
      expect(workerOf(thread)).not.toBeNull();
      // It runs below normal priority (nice 10), so its writing yields to the coordinator; this process's other threads do not.
      expect(nicenessOfThreads().filter((n) => n === 10)).toHaveLength(1);
      // A batch whose objects cannot be written (the objects folder is a file) fails with the cause.
      rmSync(join(dir, 'broken.git'), { recursive: true, force: true });
      execFileSync('git', ['init', '-q', '--bare', join(dir, 'broken.git')]);
      rmSync(join(dir, 'broken.git', 'objects'), { recursive: true });
      execFileSync('touch', [join(dir, 'broken.git', 'objects')]);
      await expect(thread.write(join(dir, 'broken.git'), objects.slice(0, 3))).rejects.toThrow(/mirror object writer: .*(ENOTDIR|EEXIST)/);
      // The thread survives a refused batch.
      await thread.write(threaded, [blob(Buffer.from('after the failure\n'))]);
      // With no batch for a while it stops, and is started again by the next one.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(workerOf(thread)).toBeNull();
      expect(nicenessOfThreads().filter((n) => n === 10)).toHaveLength(0);
      await thread.write(threaded, [blob(Buffer.from('after the failure\n'))]);
      expect(workerOf(thread)).not.toBeNull();
    } finally {
      await thread.close();
    }
    await new ObjectWriter(false).write(here, [...objects, blob(Buffer.from('after the failure\n'))]);
    const a = looseFiles(threaded);
    const b = looseFiles(here);
    // Every distinct object once (the batch names one twice), and the one written after the failure.
    expect(a.size).toBe(new Set(objects.map((o) => o.oid)).size + 1);
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    for (const [oid, bytes] of a) expect(bytes.equals(b.get(oid)!)).toBe(true);
    for (const o of objects.slice(0, 3))
      expect(execFileSync('git', ['--git-dir', threaded, 'cat-file', '-p', o.oid]).equals(Buffer.from(o.content))).toBe(true);
    execFileSync('git', ['--git-dir', threaded, 'fsck', '--strict'], { stdio: 'ignore' });
  });

  it('writes a large batch as one pack and its index, its commit loose, readable by git and by the mirror', async () => {
    const dist = (path: string) => import(pathToFileURL(resolve(`dist/apps/coordinator/src/mirror/${path}`)).href);
    const { ObjectWriter } = (await dist('repo/object-writer.js')) as { ObjectWriter: WriterClass };
    const { PACK_FROM, packIndex } = (await dist('repo/packfile.js')) as {
      PACK_FROM: number;
      packIndex: (e: { oid: string; offset: number; crc: number }[], sum: Buffer) => Buffer;
    };
    const { treeObject, commitObject } = (await dist('domain/git-object.js')) as {
      treeObject: (entries: { name: string; kind: 'file' | 'tree'; oid: string }[]) => Obj;
      commitObject: (c: { tree: string; parent: string | null; author: object; committer: object; message: string }) => Obj;
    };
    const { AuditRepo } = (await dist('repo/audit-repo.js')) as {
      AuditRepo: { open(gitdir: string): Promise<{ readTree(oid: string): Promise<{ name: string; oid: string }[]>; close(): Promise<void> }> };
    };

    // A commit of folders the way the mirror builds one: a blob and a tree per folder, one root, one commit,
    // with a blob named twice and a large blob (Huffman-only coding).
    const build = (generation: number) => {
      const objects: Obj[] = [];
      const folders = [];
      for (let i = 0; i < PACK_FROM; i++) {
        const b = blob(Buffer.from(`{"node":${i},"generation":${generation}}\n`));
        const version = blob(Buffer.from(`${generation}\n`));
        const folder = treeObject([
          { name: 'VERSION', kind: 'file', oid: version.oid },
          { name: 'flor.json', kind: 'file', oid: b.oid },
        ]);
        objects.push(b, version, folder);
        folders.push({ name: `n${i}`, kind: 'tree' as const, oid: folder.oid });
      }
      const big = blob(randomBytes(200 * 1024));
      objects.push(big);
      const root = treeObject([...folders, { name: 'big', kind: 'file', oid: big.oid }]);
      const who = { name: 'florete', email: 'mirror@florete.invalid', seconds: 1_700_000_000 + generation };
      const commit = commitObject({ tree: root.oid, parent: null, author: who, committer: who, message: `generation ${generation}\n` });
      objects.push(root, commit);
      return { objects, root, commit, folders };
    };
    const packsOf = (gitdir: string) => readdirSync(join(gitdir, 'objects', 'pack')).sort();
    const [threaded, here] = ['packed-threaded.git', 'packed-here.git'].map((name) => join(dir, name));
    for (const g of [threaded, here]) execFileSync('git', ['init', '-q', '--bare', g]);

    const first = build(1);
    const thread = new ObjectWriter(true, 300);
    try {
      await thread.write(threaded, first.objects);
    } finally {
      await thread.close();
    }
    await new ObjectWriter(false).write(here, first.objects);

    // One pack and its index, and only the commit loose; the same bytes from the thread and the calling thread.
    const [idx, pack] = packsOf(threaded);
    expect([idx, pack]).toEqual([expect.stringMatching(/^pack-[0-9a-f]{40}\.idx$/), idx.replace(/\.idx$/, '.pack')]);
    expect([...looseFiles(threaded).keys()]).toEqual([first.commit.oid]);
    expect(packsOf(here)).toEqual(packsOf(threaded));
    for (const f of packsOf(here)) expect(readFileSync(join(here, 'objects', 'pack', f)).equals(readFileSync(join(threaded, 'objects', 'pack', f)))).toBe(true);
    expect(readFileSync(join(threaded, 'objects', 'info', 'packs'), 'utf8')).toBe(`P ${pack}\n\n`);

    // git checks every checksum and CRC, finds every object the commit names, and reads them back.
    execFileSync('git', ['--git-dir', threaded, 'verify-pack', join(threaded, 'objects', 'pack', idx)], { stdio: 'ignore' });
    execFileSync('git', ['--git-dir', threaded, 'update-ref', 'refs/heads/main', first.commit.oid]);
    execFileSync('git', ['--git-dir', threaded, 'fsck', '--strict', '--no-dangling'], { stdio: 'ignore' });
    const distinct = new Set(first.objects.map((o) => o.oid)).size;
    expect(execFileSync('git', ['--git-dir', threaded, 'rev-list', '--objects', 'main'], { encoding: 'utf8' }).trim().split('\n')).toHaveLength(distinct);
    for (const o of [first.objects[0], first.objects[3 * PACK_FROM]])
      expect(execFileSync('git', ['--git-dir', threaded, 'cat-file', '-p', o.oid]).equals(Buffer.from(o.content))).toBe(true);
    // The mirror reads a packed tree back (isomorphic-git), as it does when it resumes.
    const repo = await AuditRepo.open(threaded);
    const entries = await repo.readTree(first.root.oid);
    expect(entries).toHaveLength(PACK_FROM + 1);
    expect(new Set(entries.map((e) => e.oid))).toEqual(new Set([...first.folders.map((f) => f.oid), first.objects[3 * PACK_FROM].oid]));
    await repo.close();

    // A second large batch is a second pack, and the list names both.
    const second = build(2);
    await new ObjectWriter(false).write(threaded, second.objects);
    const packs = packsOf(threaded).filter((f) => f.endsWith('.pack'));
    expect(packs).toHaveLength(2);
    expect(readFileSync(join(threaded, 'objects', 'info', 'packs'), 'utf8')).toBe(`${packs.map((p) => `P ${p}\n`).join('')}\n`);
    execFileSync('git', ['--git-dir', threaded, 'update-ref', 'refs/heads/main', second.commit.oid]);
    execFileSync('git', ['--git-dir', threaded, 'fsck', '--strict'], { stdio: 'ignore' });

    // An offset past 2 GiB goes to the index's table of large offsets, as git reads it.
    const oids = ['11'.repeat(20), '22'.repeat(20)];
    const shown = execFileSync('git', ['show-index'], {
      input: packIndex(
        [
          { oid: oids[1], offset: 12, crc: 7 },
          { oid: oids[0], offset: 0x90000000, crc: 0xfffffffe },
        ],
        Buffer.alloc(20),
      ),
      encoding: 'utf8',
    });
    expect(shown.trim().split('\n')).toEqual([`${0x90000000} ${oids[0]} (fffffffe)`, `12 ${oids[1]} (00000007)`]);
  });
});
