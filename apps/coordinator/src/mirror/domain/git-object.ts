import { createHash } from 'node:crypto';

/** A git object in memory: its id is sha1 over `<type> <size>\0<content>`, so equal content has one id everywhere. */
export interface GitObject {
  readonly type: 'blob' | 'tree' | 'commit';
  readonly oid: string;
  readonly content: Buffer;
}

export function gitObject(type: GitObject['type'], content: Buffer): GitObject {
  const oid = createHash('sha1').update(`${type} ${content.length}\0`).update(content).digest('hex');
  return { type, oid, content };
}

export interface TreeEntry {
  readonly name: string;
  readonly kind: 'file' | 'tree';
  readonly oid: string;
}

/**
 * Git orders tree entries by name bytes with a folder compared as if its name ended in '/':
 * `a-b/` sorts before `a/`. fsck --strict rejects any other order.
 */
export function treeOrder(a: TreeEntry, b: TreeEntry): number {
  const ka = a.kind === 'tree' ? `${a.name}/` : a.name;
  const kb = b.kind === 'tree' ? `${b.name}/` : b.name;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Entries must already be in treeOrder (callers that keep a sorted list avoid re-sorting 10,000 entries). */
export function treeObjectSorted(entries: readonly TreeEntry[]): GitObject {
  // One buffer written in place: the root of a 10,000-node mirror is rebuilt on every commit.
  let size = 0;
  for (const e of entries) size += (e.kind === 'tree' ? 6 : 7) + Buffer.byteLength(e.name, 'utf8') + 1 + 20;
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  for (const e of entries) {
    at += buf.write(e.kind === 'tree' ? '40000 ' : '100644 ', at, 'latin1');
    at += buf.write(e.name, at, 'utf8');
    buf[at++] = 0;
    at += buf.write(e.oid, at, 'hex');
  }
  return gitObject('tree', buf);
}

export function treeObject(entries: readonly TreeEntry[]): GitObject {
  return treeObjectSorted([...entries].sort(treeOrder));
}

/** Parses a tree object's content back into entries (for reading a stored root tree and for verification). */
export function parseTree(content: Uint8Array): TreeEntry[] {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  const entries: TreeEntry[] = [];
  let i = 0;
  while (i < buf.length) {
    const space = buf.indexOf(0x20, i);
    const nul = buf.indexOf(0, space);
    const mode = buf.toString('latin1', i, space);
    const name = buf.toString('utf8', space + 1, nul);
    entries.push({ name, kind: mode === '40000' ? 'tree' : 'file', oid: buf.toString('hex', nul + 1, nul + 21) });
    i = nul + 21;
  }
  return entries;
}

export interface Signature {
  readonly name: string;
  readonly email: string;
  /** Seconds since the epoch, UTC. */
  readonly seconds: number;
}

export interface CommitFields {
  readonly tree: string;
  readonly parent: string | null;
  readonly author: Signature;
  readonly committer: Signature;
  readonly message: string;
}

const signature = (s: Signature) => `${s.name} <${s.email}> ${s.seconds} +0000`;

export function commitObject(c: CommitFields): GitObject {
  const lines = [`tree ${c.tree}`];
  if (c.parent) lines.push(`parent ${c.parent}`);
  lines.push(`author ${signature(c.author)}`, `committer ${signature(c.committer)}`, '', c.message);
  return gitObject('commit', Buffer.from(lines.join('\n'), 'utf8'));
}

/** A commit as the mirror reads it back: its first parent only (the mirror's history is a line). */
export interface ParsedCommit {
  readonly tree: string;
  readonly parent: string | null;
  readonly author: { readonly name: string; readonly email: string; readonly timestamp: number };
  /** Carriage returns and leading blank lines dropped, ending in exactly one newline, as git shows a message. */
  readonly message: string;
}

/**
 * A commit's content: `tree` first, then its parents, then the other headers (`author`, `committer`,
 * a signature's lines continued with a leading space), a blank line and the message.
 */
export function parseCommit(content: Uint8Array): ParsedCommit {
  const text = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString('utf8');
  const blank = text.indexOf('\n\n');
  const headers = (blank === -1 ? text : text.slice(0, blank)).split('\n').filter((h) => !h.startsWith(' '));
  const valueOf = (h: string) => h.slice(h.indexOf(' ') + 1);
  if (!headers[0]?.startsWith('tree ')) throw new Error(`a commit starts with its tree, not ${JSON.stringify(headers[0]?.slice(0, 40) ?? '')}`);
  const parents = headers.filter((h) => h.startsWith('parent '));
  const authorLine = headers.find((h) => h.startsWith('author '));
  const author = authorLine ? /^(.*) <(.*)> (\S*) (\S*)$/.exec(valueOf(authorLine)) : null;
  if (!author) throw new Error(`a commit names its author as "name <email> seconds zone", not ${JSON.stringify(authorLine?.slice(0, 80) ?? 'nobody')}`);
  const message = blank === -1 ? '' : text.slice(blank + 2);
  return {
    tree: valueOf(headers[0]),
    parent: parents.length ? valueOf(parents[0]) : null,
    author: { name: author[1], email: author[2], timestamp: Number(author[3]) },
    message: `${message.replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n`,
  };
}
