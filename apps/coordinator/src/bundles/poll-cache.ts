import type { RevocationReason, Change, ChangeFeed } from '../db/index.js';

/** What a poll needs to know about a credential, its node's head and the checkpoint: the poll row without the JWS. */
export interface PollRow {
  readonly node: string;
  readonly secret_hash: string;
  readonly revoked_at: Date | string | null;
  readonly revoked_reason: RevocationReason | null;
  readonly version: number | null;
  readonly retired: boolean | null;
  readonly etag: string | null;
  readonly checkpoint: string | null;
  /** The signed tree checkpoint note read with it (absent in rows of tests that have no tree). */
  readonly tree_note?: string | null;
  readonly confirm_within: number | null;
  readonly confirmed_by: string | null;
}

interface Credential {
  readonly node: string;
  readonly secretHash: string;
  readonly revoked: boolean;
}

interface Head {
  readonly etag: string;
  /** The `florete-confirm` header of the head, or null when its publish asked for no operator confirmation. */
  readonly confirm: string | null;
}

/**
 * The `florete-confirm` header a head's poll answers carry when its publish asked for operator
 * confirmation: `version=N; within=S`, and `; by=<who, URI-encoded>` once confirmed. Null otherwise.
 */
export function confirmHeader(row: Pick<PollRow, 'version' | 'confirm_within' | 'confirmed_by'>): string | null {
  if (row.confirm_within === null || row.version === null) return null;
  return `version=${row.version}; within=${row.confirm_within}${row.confirmed_by === null ? '' : `; by=${encodeURIComponent(row.confirmed_by)}`}`;
}

/**
 * RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly (at most 16 looked at).
 * The same rule the database query applies.
 */
export function ifNoneMatchTags(header: string | undefined): string[] {
  if (!header) return [];
  // One tag, as every agent sends: no list to split (every poll comes through here).
  if (!header.includes(',')) {
    const tag = strongTag(header);
    return tag.length > 0 ? [tag] : [];
  }
  return header
    .split(',')
    .map(strongTag)
    .filter((t) => t.length > 0)
    .slice(0, 16);
}

/** One entity tag as compared: trimmed, a weak tag's `W/` dropped (a bundle's bytes are its identity either way). */
function strongTag(tag: string): string {
  const trimmed = tag.trim();
  return trimmed.startsWith('W/') ? trimmed.slice(2) : trimmed;
}

export function etagMatches(tags: readonly string[], etag: string | null): boolean {
  return etag !== null && (tags.includes('*') || tags.includes(etag));
}

/** The checkpoint header's value: the signed note, base64 (a note has newlines, a header may not). */
export function checkpointHeader(note: string): string {
  return Buffer.from(note, 'utf8').toString('base64');
}

/** Keys whose last change memory records one by one, at most: beyond it every read begun before is refused whole. */
const RECORDED_CHANGES = 50_000;
/** How long changes are recorded key by key before the records are cleared (a read begun before then keeps nothing). */
const RECORDED_FOR_MS = 30_000;

/**
 * The poll's memory on one replica: credential id → (node, secret hash, revoked), node → ETag (or no
 * head yet), and the checkpoint note. Filled from the database rows polls read anyway, emptied by the
 * change feed. It answers only while the feed says it is current (see ChangeFeed).
 *
 * A database read may race a change: it can return the old row after the change's notification has
 * emptied the entry. So every read notes the generation before it starts (mark), memory records the
 * generation at which each key last changed, and a row's credential, head and checkpoint are each
 * kept only if no change to that one arrived meanwhile. Key by key rather than any change at all: a
 * publish of 10,000 nodes arrives as a notification per 1,000 heads and one for the checkpoint, and
 * the rows the first woke would otherwise all be dropped for the changes of the other nodes, so that
 * every watch made again after it went to the database. The records are bounded (RECORDED_CHANGES,
 * RECORDED_FOR_MS): cleared, they leave a floor, and a read marked before it keeps nothing.
 */
export class PollCache {
  private readonly credentials = new Map<string, Credential>();
  private readonly heads = new Map<string, Head | null>();
  /** The checkpoint as the poll answer's header carries it: encoded once, not on every poll. */
  private checkpoint: string | null | undefined = undefined;
  /** The signed tree checkpoint note, as read with the checkpoint (changed with it). */
  private tree: string | null | undefined = undefined;
  private generation = 0;
  /** The generation each key last changed at, since `floor`. */
  private readonly headChanged = new Map<string, number>();
  private readonly credentialChanged = new Map<string, number>();
  /** The generation of the last `*` of each kind, and of the last checkpoint change. */
  private allHeadsChanged = 0;
  private allCredentialsChanged = 0;
  private checkpointChanged = 0;
  /** A read marked before it keeps nothing: what changed then is not recorded key by key (a reset, or records cleared). */
  private floor = 0;
  private recordedSince: number;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.recordedSince = now();
    feed.subscribe((change) => this.apply(change));
  }

  /** How many entries memory holds. */
  get size(): { credentials: number; heads: number } {
    return { credentials: this.credentials.size, heads: this.heads.size };
  }

  apply(change: Change): void {
    const before = this.generation;
    const generation = ++this.generation;
    const recorded = this.headChanged.size + this.credentialChanged.size;
    if (recorded === 0) this.recordedSince = this.now();
    else if (recorded > RECORDED_CHANGES || this.now() - this.recordedSince > RECORDED_FOR_MS) this.forgetChanges(before);
    if (change.kind === 'reset') {
      this.credentials.clear();
      this.heads.clear();
      this.checkpoint = undefined;
      this.tree = undefined;
      this.forgetChanges(generation);
    } else if (change.kind === 'checkpoint') {
      this.checkpoint = undefined;
      this.tree = undefined;
      this.checkpointChanged = generation;
    } else {
      const heads = change.kind === 'heads';
      const map = heads ? this.heads : this.credentials;
      const changed = heads ? this.headChanged : this.credentialChanged;
      if (change.keys === '*') {
        map.clear();
        // The `*` covers every key's earlier record.
        changed.clear();
        if (heads) this.allHeadsChanged = generation;
        else this.allCredentialsChanged = generation;
      } else {
        for (const key of change.keys) {
          map.delete(key);
          changed.set(key, generation);
        }
      }
    }
  }

  /** Stops recording changes key by key up to `generation`: a read marked before it keeps nothing. */
  private forgetChanges(generation: number): void {
    this.headChanged.clear();
    this.credentialChanged.clear();
    this.floor = generation;
    this.recordedSince = this.now();
  }

  private credentialChangedSince(mark: number, credentialId: string): boolean {
    return mark < this.floor || this.allCredentialsChanged > mark || (this.credentialChanged.get(credentialId) ?? 0) > mark;
  }

  private headChangedSince(mark: number, node: string): boolean {
    return mark < this.floor || this.allHeadsChanged > mark || (this.headChanged.get(node) ?? 0) > mark;
  }

  /**
   * Whether a change to `credentialId` or to `node`'s head may have arrived since `mark`: what a watch
   * read at `mark` and held only now could have missed.
   */
  changedSince(mark: number, credentialId: string, node: string): boolean {
    return this.credentialChangedSince(mark, credentialId) || this.headChangedSince(mark, node);
  }

  /** Whether memory may answer now: the change feed is current (and so wakes held watches in time). */
  trusted(): boolean {
    return this.feed.trusted();
  }

  /** The checkpoint header as memory holds it now; undefined when memory does not know it. */
  checkpointNow(): string | null | undefined {
    return this.checkpoint;
  }

  /** The tree checkpoint note as memory holds it now; undefined when memory does not know it. */
  treeNow(): string | null | undefined {
    return this.tree;
  }

  /** The generation a database read starts at: pass it to remember(). */
  mark(): number {
    return this.generation;
  }

  /**
   * Keeps what a poll row read from the database says, each of its credential, its node's head and
   * the checkpoint unless a change to that one arrived since `mark`; nothing while memory is not trusted.
   */
  remember(mark: number, credentialId: string, row: PollRow): void {
    if (!this.feed.trusted()) return;
    if (!this.credentialChangedSince(mark, credentialId))
      this.credentials.set(credentialId, { node: row.node, secretHash: row.secret_hash, revoked: row.revoked_at !== null });
    if (!this.headChangedSince(mark, row.node)) this.heads.set(row.node, row.etag === null ? null : { etag: row.etag, confirm: confirmHeader(row) });
    if (mark >= this.floor && this.checkpointChanged <= mark) {
      this.checkpoint = row.checkpoint === null ? null : checkpointHeader(row.checkpoint);
      this.tree = row.tree_note ?? null;
    }
  }

  /**
   * The answer memory can give on its own: a live credential of `node` whose secret `matches`, and a
   * head whose ETag is one of `tags` — a 304 with that ETag and the checkpoint header. Anything else (not in
   * memory, a refusal, a new version, memory not trusted) is null: the database answers it.
   */
  notModified(
    credentialId: string,
    node: string,
    tags: readonly string[],
    matches: (secretHash: string) => boolean,
  ): { etag: string; checkpoint: string | null; confirm: string | null; tree: string | null } | null {
    if (tags.length === 0 || !this.feed.trusted()) return null;
    const credential = this.credentials.get(credentialId);
    if (!credential || credential.revoked || credential.node !== node) return null;
    const head = this.heads.get(node);
    if (!head || this.checkpoint === undefined || this.tree === undefined || !etagMatches(tags, head.etag)) return null;
    if (!matches(credential.secretHash)) return null;
    return { etag: head.etag, checkpoint: this.checkpoint, confirm: head.confirm, tree: this.tree };
  }
}
