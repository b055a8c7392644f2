import * as nodeFs from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseCommit, parseTree, type GitObject, type TreeEntry } from '../domain/git-object.js';
import { BRANCH, ledgerPositionOf, MirrorTree } from '../domain/mirror-tree.js';
import { looseObjectPath, readLooseObjectSync, writeFileAtomicSync } from './loose-objects.js';
import { FoldHere, ThreadFold, type MirrorFold } from './mirror-fold.js';
import { ObjectWriter } from './object-writer.js';

async function atomicWriteFile(path: string, data: string | Uint8Array, options?: nodeFs.WriteFileOptions): Promise<void> {
  writeFileAtomicSync(path, data, options);
}

/**
 * Node's fs for isomorphic-git with every write made atomic (it never overwrites an existing loose
 * object, so a torn object left by a crash would otherwise stay torn) and stat answered directly.
 */
const fs = {
  ...nodeFs,
  promises: {
    ...nodeFs.promises,
    writeFile: atomicWriteFile,
    stat: async (path: string) => nodeFs.statSync(path),
    lstat: async (path: string) => nodeFs.lstatSync(path),
  },
};

/**
 * isomorphic-git, loaded the first time an object is not loose: the mirror writes its commits and
 * small batches loose and reads them itself, so it is needed only for what sits in a pack (a large
 * commit's trees and blobs) and to push. Loaded at start-up, its modules stayed resident in an idle
 * coordinator that never used them (bench:rss; the figures are in bench/README.md).
 */
let isomorphicGit: Promise<typeof import('isomorphic-git').default> | undefined;
export const loadIsomorphicGit = () => (isomorphicGit ??= import('isomorphic-git').then((m) => m.default));

/**
 * A new bare repository, laid out as `git init --bare` and isomorphic-git's init lay one out. HEAD is
 * written last: `open` takes a directory with a HEAD for a repository made whole, and makes one again
 * where a crash left less.
 */
function initBareRepository(gitdir: string): void {
  for (const dir of ['hooks', 'info', 'objects/info', 'objects/pack', 'refs/heads', 'refs/tags']) nodeFs.mkdirSync(join(gitdir, dir), { recursive: true });
  writeFileAtomicSync(
    join(gitdir, 'config'),
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = false\n\tbare = true\n\tsymlinks = false\n\tignorecase = true\n',
  );
  writeFileAtomicSync(join(gitdir, 'HEAD'), `ref: ${BRANCH}\n`);
}

export interface RepoHead {
  readonly commit: string | null;
  /** The Ledger-Position trailer of the head commit; 0 for an empty repository. */
  readonly position: number;
}

export interface StoredCommit {
  readonly oid: string;
  readonly tree: string;
  readonly parent: string | null;
  readonly author: { name: string; email: string; timestamp: number };
  readonly message: string;
}

/** The bare audit repository on disk: objects written and read by the mirror itself, refs and info files kept current for dumb HTTP. */
export class AuditRepo {
  /** The head this process last wrote, so a warm worker need not re-read its commit for the trailer. */
  private lastHead: RepoHead | null = null;
  private readonly writer = new ObjectWriter();

  private constructor(readonly gitdir: string) {}

  static async open(gitdir: string): Promise<AuditRepo> {
    if (!nodeFs.existsSync(join(gitdir, 'HEAD'))) initBareRepository(gitdir);
    const repo = new AuditRepo(gitdir);
    await mkdir(join(gitdir, 'objects', 'info'), { recursive: true });
    // Small commits' objects are loose; a large commit's trees and blobs go into a pack of their own,
    // listed here for dumb-HTTP clients as it is written (packfile.ts). Until then the list is empty.
    if (!nodeFs.existsSync(join(gitdir, 'objects', 'info', 'packs'))) await atomicWriteFile(join(gitdir, 'objects', 'info', 'packs'), '\n');
    // Only when missing: a reader opening the repository must not race the writer's info/refs.
    if (!nodeFs.existsSync(join(gitdir, 'info', 'refs'))) await repo.writeInfoRefs(await repo.readRef());
    return repo;
  }

  /** Rewrites info/refs from the branch: the writer calls it at start, in case a crash fell between the two. */
  async refreshInfoRefs(): Promise<void> {
    await this.writeInfoRefs(await this.readRef());
  }

  /**
   * Writes objects, on the writer's own thread (see ObjectWriter): a small batch as loose objects,
   * `objects/<2 hex>/<38 hex>`, the zlib-deflated `<type> <size>\0<content>`, each written whole under
   * a temporary name and renamed, and never rewritten once present; a large one as a pack with its
   * index, its commit loose (writeObjectsSync). Written by the mirror itself rather than through
   * isomorphic-git, whose writeObject set up a file-system wrapper and looked for the git directory
   * on every call: that was most of the mirror's time for a 10,000-node commit (40,000 objects for
   * the first one).
   */
  async writeObjects(objects: readonly GitObject[]): Promise<void> {
    await this.writer.write(this.gitdir, objects);
  }

  /**
   * The mirror's commits from `commit` on (MirrorFold): folded on the object writer's thread when it
   * has one, so hashing a large publish's objects keeps off this event loop, else on this thread.
   */
  async foldAt(commit: string | null): Promise<MirrorFold> {
    const rootOf = async (at: string) => this.readObject((await this.readCommit(at)).tree, 'tree');
    if (this.writer.useThread) return new ThreadFold(this.writer, this.gitdir, commit, rootOf);
    return new FoldHere(commit ? MirrorTree.resume(commit, parseTree(await rootOf(commit))) : MirrorTree.empty(), (objects) => this.writeObjects(objects));
  }

  /** Stops the object writer's thread; a later write starts it again. */
  async close(): Promise<void> {
    await this.writer.close();
  }

  async readRef(): Promise<string | null> {
    try {
      return (await readFile(join(this.gitdir, BRANCH), 'utf8')).trim() || null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async head(): Promise<RepoHead> {
    const commit = await this.readRef();
    if (!commit) return { commit: null, position: 0 };
    if (this.lastHead?.commit === commit) return this.lastHead;
    const position = ledgerPositionOf((await this.readCommit(commit)).message);
    if (position === null) throw new Error(`mirror head ${commit} has no Ledger-Position trailer`);
    return { commit, position };
  }

  /** Moves the branch, then info/refs: a client never sees a ref before the objects it needs. */
  async setRef(commit: string, position: number): Promise<void> {
    this.lastHead = null;
    const path = join(this.gitdir, BRANCH);
    await mkdir(dirname(path), { recursive: true });
    await atomicWriteFile(path, `${commit}\n`);
    await this.writeInfoRefs(commit);
    this.lastHead = { commit, position };
  }

  private async writeInfoRefs(commit: string | null): Promise<void> {
    await mkdir(join(this.gitdir, 'info'), { recursive: true });
    await atomicWriteFile(join(this.gitdir, 'info', 'refs'), commit ? `${commit}\t${BRANCH}\n` : '');
  }

  async hasObject(oid: string): Promise<boolean> {
    return nodeFs.existsSync(looseObjectPath(this.gitdir, oid));
  }

  async readCommit(oid: string): Promise<StoredCommit> {
    return { oid, ...parseCommit(await this.readObject(oid, 'commit')) };
  }

  async readTree(oid: string): Promise<TreeEntry[]> {
    return parseTree(await this.readObject(oid, 'tree'));
  }

  /** An object's content, without its type and size: read here when it is loose, else from its pack. */
  private async readObject(oid: string, type: GitObject['type']): Promise<Uint8Array> {
    const found = readLooseObjectSync(this.gitdir, oid) ?? (await this.readPacked(oid));
    if (found.type !== type) throw new Error(`git object ${oid} is a ${found.type}, not a ${type}`);
    return found.content;
  }

  /** An object from a pack, by isomorphic-git, which checks its bytes against its name as the loose reader does. */
  private async readPacked(oid: string): Promise<{ type: string; content: Uint8Array }> {
    const { type, object } = await (await loadIsomorphicGit()).readObject({ fs, gitdir: this.gitdir, oid, format: 'content' });
    return { type, content: object as Uint8Array };
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    return this.readObject(oid, 'blob');
  }

  /** Commits from the root to `tip` along first parents. */
  async history(tip: string | null): Promise<StoredCommit[]> {
    const out: StoredCommit[] = [];
    for (let oid = tip; oid;) {
      const c = await this.readCommit(oid);
      out.push(c);
      oid = c.parent;
    }
    return out.reverse();
  }
}

export { fs as auditFs };
