import type { Kysely } from 'kysely';
import { setDigest, sha256Hex } from '#bundle';
import type { Database } from '../db/index.js';
import { verifyLedger } from '../ledger/index.js';
import { treeObjectSorted, type TreeEntry } from './domain/git-object.js';
import { authorOf, blobsFrom, commitMessage, MirrorTree } from './domain/mirror-tree.js';
import type { MirrorPublish } from './domain/publish-group.js';
import type { AuditRepo, StoredCommit } from './repo/audit-repo.js';
import { readCheckpoint } from './store/checkpoint.js';
import { publishPages } from './store/read-publishes.js';

/** Where the mirror first disagrees with the ledger: the publish, the commit, and when known the node and file. */
export interface MirrorDisagreement {
  readonly commit: string | null;
  readonly expected_commit: string | null;
  readonly publish_id?: string;
  readonly node?: string;
  readonly file?: string;
}

export interface MirrorSummary {
  readonly head: string | null;
  /** Ledger position of the last publish the mirror holds. */
  readonly position: number;
  readonly commits: number;
  /** Publishes in the ledger the mirror has not caught up with yet (the worker is asynchronous). */
  readonly lag: number;
  readonly nodes: number;
}

export type MirrorVerdict =
  | { readonly ok: true; readonly position: number; readonly hash: string; readonly mirror: MirrorSummary }
  | { readonly ok: false; readonly position: number; readonly reason: string; readonly mirror?: MirrorDisagreement };

class Disagreement extends Error {
  constructor(
    readonly position: number,
    readonly reason: string,
    readonly where: MirrorDisagreement,
  ) {
    super(reason);
  }
}

/**
 * Cross-verification: the hash chain first, then the mirror. Every commit on the branch must be the
 * commit a rebuild from the ledger produces for the same publish, and every node folder at the head
 * must hold exactly the files whose sha256 give the node's set digest and version. A mirror that is
 * only behind (asynchronous) is not a disagreement; a branch rewound behind its checkpoint is.
 */
export async function verifyWithMirror(db: Kysely<Database>, repo: AuditRepo): Promise<MirrorVerdict> {
  const chain = await verifyLedger(db);
  if (!chain.ok) return chain;
  try {
    const history = await repo.history(await repo.readRef());
    const tree = MirrorTree.empty(true);
    let publishes = 0;
    let mirroredPosition = 0;
    let headNodes = 0;
    for await (const { items, blobs } of publishPages(db, 0)) {
      for (const item of items) {
        if (item.kind !== 'publish') continue;
        const p = item.publish;
        const { commit } = tree.apply(p, blobsFrom(blobs, `the publish at ${p.position}`));
        const actual = history[publishes];
        publishes++;
        if (!actual) continue;
        if (actual.oid !== commit) throw await locate(repo, tree, p, actual, commit);
        mirroredPosition = p.position;
        if (publishes === history.length) {
          await checkFiles(repo, tree, p, actual);
          headNodes = tree.nodeState().size;
        }
      }
    }
    if (history.length > publishes) {
      const extra = history[publishes];
      throw new Disagreement(chain.position, `the mirror has commit ${extra.oid} that no ledger publish explains`, {
        commit: extra.oid,
        expected_commit: null,
      });
    }
    const checkpoint = await readCheckpoint(db);
    if (checkpoint.commit && !history.some((c) => c.oid === checkpoint.commit) && (await repo.hasObject(checkpoint.commit))) {
      throw new Disagreement(checkpoint.position, `the branch was moved back behind the checkpointed commit ${checkpoint.commit}`, {
        commit: history.at(-1)?.oid ?? null,
        expected_commit: checkpoint.commit,
      });
    }
    const head = history.at(-1)?.oid ?? null;
    return { ...chain, mirror: { head, position: mirroredPosition, commits: history.length, lag: publishes - history.length, nodes: headNodes } };
  } catch (err) {
    if (err instanceof Disagreement) return { ok: false, position: err.position, reason: err.reason, mirror: err.where };
    throw err;
  }
}

/** The first thing that differs between the commit a rebuild produces and the one on the branch. */
async function locate(repo: AuditRepo, tree: MirrorTree, p: MirrorPublish, actual: StoredCommit, expected: string): Promise<Disagreement> {
  const where = { commit: actual.oid, expected_commit: expected, publish_id: p.publishId };
  const at = `mirror commit ${actual.oid} for ledger position ${p.position}`;
  const expectedRoot = treeObjectSorted(tree.rootEntries()).oid;
  if (actual.tree !== expectedRoot) {
    const found = await firstTreeDifference(repo, tree, actual.tree);
    return new Disagreement(p.position, `${at} does not hold what the ledger says: ${found.what}`, {
      ...where,
      node: found.node,
      ...(found.file ? { file: found.file } : {}),
    });
  }
  const author = authorOf(p.actor);
  const field =
    actual.message !== commitMessage(p)
      ? 'message'
      : actual.author.name !== author.name || actual.author.email !== author.email
        ? 'author'
        : actual.author.timestamp !== Math.floor(Date.parse(p.recordedAt) / 1000)
          ? 'author date'
          : 'committer';
  return new Disagreement(p.position, `${at} has the right files but a rewritten ${field}`, where);
}

async function firstTreeDifference(repo: AuditRepo, tree: MirrorTree, actualRoot: string): Promise<{ node?: string; file?: string; what: string }> {
  const actual = new Map((await repo.readTree(actualRoot)).map((e) => [e.name, e]));
  const expected = new Map(tree.rootEntries().map((e) => [e.name, e]));
  for (const node of [...new Set([...actual.keys(), ...expected.keys()])].sort()) {
    const a = actual.get(node);
    const e = expected.get(node);
    if (a?.oid === e?.oid) continue;
    if (!a) return { node, what: `folder ${node}/ is missing` };
    if (!e) return { node, what: `folder ${node}/ should not exist` };
    const files = await mgmtFiles(repo, a);
    if (!files) return { node, what: `folder ${node}/ is not <node>/mgmt/` };
    const file = firstFileDifference(files, tree.nodeState().get(node)?.files ?? []);
    return { node, file: file ? `${node}/mgmt/${file}` : undefined, what: file ? `${node}/mgmt/${file} differs` : `folder ${node}/ differs` };
  }
  return { what: 'the root tree differs' };
}

async function mgmtFiles(repo: AuditRepo, folder: TreeEntry): Promise<TreeEntry[] | null> {
  if (folder.kind !== 'tree') return null;
  const inner = await repo.readTree(folder.oid);
  if (inner.length !== 1 || inner[0].name !== 'mgmt' || inner[0].kind !== 'tree') return null;
  return repo.readTree(inner[0].oid);
}

function firstFileDifference(actual: readonly TreeEntry[], expected: readonly TreeEntry[]): string | undefined {
  const a = new Map(actual.map((e) => [e.name, e.oid]));
  const e = new Map(expected.map((x) => [x.name, x.oid]));
  return [...new Set([...a.keys(), ...e.keys()])].sort().find((name) => a.get(name) !== e.get(name));
}

/** Reads every file at the head back from git and checks it against the node's set digest and version. */
async function checkFiles(repo: AuditRepo, tree: MirrorTree, p: MirrorPublish, head: StoredCommit): Promise<void> {
  const at = (node: string, what: string, file?: string) =>
    new Disagreement(p.position, `mirror head ${head.oid}: ${what}`, {
      commit: head.oid,
      expected_commit: head.oid,
      publish_id: p.publishId,
      node,
      ...(file ? { file } : {}),
    });
  const nodes = tree.nodeState();
  const folders = await repo.readTree(head.tree);
  for (const folder of folders) {
    const expected = nodes.get(folder.name);
    if (!expected) throw at(folder.name, `folder ${folder.name}/ belongs to no live node`);
    const files = await mgmtFiles(repo, folder);
    if (!files) throw at(folder.name, `folder ${folder.name}/ is not <node>/mgmt/`);
    const refs = [];
    let version: string | null = null;
    for (const f of files) {
      const bytes = await repo.readBlob(f.oid);
      if (f.name === 'VERSION') version = Buffer.from(bytes).toString('utf8');
      else refs.push({ name: f.name, sha256: sha256Hex(bytes) });
    }
    if (version !== `${expected.version}\n`) throw at(folder.name, `${folder.name}/mgmt/VERSION is not ${expected.version}`, `${folder.name}/mgmt/VERSION`);
    if (setDigest(refs) !== expected.setDigest) {
      const file = firstFileDifference(files, expected.files);
      throw at(folder.name, `files of ${folder.name} do not match set digest ${expected.setDigest}`, file ? `${folder.name}/mgmt/${file}` : undefined);
    }
  }
  if (folders.length !== nodes.size) {
    const missing = [...nodes.keys()].find((n) => !folders.some((f) => f.name === n))!;
    throw at(missing, `folder ${missing}/ is missing`);
  }
}
