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
    const { ObjectWriter } = (await import(pathToFileURL(resolve('dist/apps/coordinator/src/mirror/repo/object-writer.js')).href)) as { ObjectWriter: WriterClass };
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
    for (const o of objects.slice(0, 3)) expect(execFileSync('git', ['--git-dir', threaded, 'cat-file', '-p', o.oid]).equals(Buffer.from(o.content))).toBe(true);
    execFileSync('git', ['--git-dir', threaded, 'fsck', '--strict'], { stdio: 'ignore' });
  });
});
