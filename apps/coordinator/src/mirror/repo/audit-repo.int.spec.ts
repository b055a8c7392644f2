import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { AuditRepo, auditFs } from './audit-repo.js';
import { readLooseObjectSync } from './loose-objects.js';

/** The mirror's own reading of commits, trees and blobs against git's writing and isomorphic-git's reading, in real repositories. */
describe("the audit repository's object reader", () => {
  const base = mkdtempSync(join(tmpdir(), 'florete-audit-repo-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Ann Operator',
    GIT_AUTHOR_EMAIL: 'ann@example.org',
    GIT_AUTHOR_DATE: '1764921321 +0130',
    GIT_COMMITTER_NAME: 'ci',
    GIT_COMMITTER_EMAIL: 'ci@example.org',
    GIT_COMMITTER_DATE: '1764921400 -0500',
  };
  const gitIn = (gitdir: string, args: string[], input?: string) =>
    execFileSync('git', ['--git-dir', gitdir, ...args], { env, encoding: 'utf8', stdio: 'pipe', ...(input !== undefined ? { input } : {}) }).trim();

  /** A bare repository made by git: a blob, a tree, a root commit and a merge whose message git kept as given. */
  function gitRepository(name: string) {
    const gitdir = join(base, name);
    execFileSync('git', ['init', '--bare', '-q', gitdir]);
    const blob = gitIn(gitdir, ['hash-object', '-w', '--stdin'], '{"node":"alpha"}\n');
    const tree = gitIn(gitdir, ['mktree'], `100644 blob ${blob}\tflor.json\n`);
    const root = gitIn(gitdir, ['commit-tree', tree, '-m', 'root']);
    const side = gitIn(gitdir, ['commit-tree', tree, '-m', 'side']);
    // commit-tree keeps a message as given: blank lines around it, carriage returns and all.
    const messageFile = join(base, `${name}.msg`);
    writeFileSync(messageFile, '\n\nPublish 2\r\n\r\nLedger-Position: 2\r\n\n\n');
    const merge = gitIn(gitdir, ['commit-tree', tree, '-p', root, '-p', side, '-F', messageFile]);
    gitIn(gitdir, ['update-ref', 'refs/heads/main', merge]);
    return { gitdir, blob, tree, root, merge };
  }

  it('reads loose commits, trees and blobs as isomorphic-git reads them, and packed ones through it', async () => {
    for (const packed of [false, true]) {
      const made = gitRepository(packed ? 'packed' : 'loose');
      if (packed) gitIn(made.gitdir, ['repack', '-a', '-d', '-q']);
      expect(readLooseObjectSync(made.gitdir, made.merge) === undefined).toBe(packed);
      const repo = await AuditRepo.open(made.gitdir);
      try {
        for (const oid of [made.merge, made.root]) {
          const { commit } = await git.readCommit({ fs: auditFs, gitdir: made.gitdir, oid });
          expect(await repo.readCommit(oid)).toEqual({
            oid,
            tree: commit.tree,
            parent: commit.parent[0] ?? null,
            author: { name: commit.author.name, email: commit.author.email, timestamp: commit.author.timestamp },
            message: commit.message,
          });
        }
        const merged = await repo.readCommit(made.merge);
        expect(merged).toMatchObject({ parent: made.root, author: { name: 'Ann Operator', email: 'ann@example.org', timestamp: 1764921321 } });
        expect(merged.message).toBe('Publish 2\n\nLedger-Position: 2\n');
        expect(await repo.readTree(made.tree)).toEqual([{ name: 'flor.json', kind: 'file', oid: made.blob }]);
        expect(Buffer.from(await repo.readBlob(made.blob)).toString()).toBe('{"node":"alpha"}\n');
        expect((await repo.history(made.merge)).map((c) => c.oid)).toEqual([made.root, made.merge]);
        await expect(repo.readTree(made.merge)).rejects.toThrow(`git object ${made.merge} is a commit, not a tree`);
      } finally {
        await repo.close();
      }
    }
  });

  it('reports a loose object whose bytes no longer hash to its name, and reads nothing from it', async () => {
    const made = gitRepository('corrupt');
    const path = join(made.gitdir, 'objects', made.root.slice(0, 2), made.root.slice(2));
    // Other bytes under the commit's name: a well-formed object, not the one named.
    const other = readFileSync(join(made.gitdir, 'objects', made.blob.slice(0, 2), made.blob.slice(2)));
    rmSync(path);
    writeFileSync(path, other);
    const repo = await AuditRepo.open(made.gitdir);
    try {
      await expect(repo.readCommit(made.root)).rejects.toThrow(`git object ${made.root} is corrupt: its bytes hash to ${made.blob}`);
      // Bytes that are no zlib stream at all, as a torn copy would leave.
      const treePath = join(made.gitdir, 'objects', made.tree.slice(0, 2), made.tree.slice(2));
      rmSync(treePath);
      writeFileSync(treePath, 'not a git object');
      await expect(repo.readTree(made.tree)).rejects.toThrow(`git object ${made.tree} is corrupt: incorrect header check`);
    } finally {
      await repo.close();
    }
  });

  it('makes a new repository that git reads as a bare one on the main branch', async () => {
    const gitdir = join(base, 'new.git');
    const repo = await AuditRepo.open(gitdir);
    await repo.close();
    expect(gitIn(gitdir, ['rev-parse', '--is-bare-repository'])).toBe('true');
    expect(gitIn(gitdir, ['symbolic-ref', 'HEAD'])).toBe('refs/heads/main');
    expect(() => gitIn(gitdir, ['fsck', '--strict'])).not.toThrow();
    expect(await repo.head()).toEqual({ commit: null, position: 0 });
  });
});
