import type { RevocationReason } from '../db/database.js';
import type { Change, ChangeFeed } from '../db/change-feed.js';

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
}

interface Credential {
  readonly node: string;
  readonly secretHash: string;
  readonly revoked: boolean;
}

interface Head {
  readonly etag: string;
}

/**
 * RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly (at most 16 looked at).
 * The same rule the database query applies.
 */
export function ifNoneMatchTags(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .filter((t) => t.length > 0)
    .slice(0, 16);
}

export function etagMatches(tags: readonly string[], etag: string | null): boolean {
  return etag !== null && (tags.includes('*') || tags.includes(etag));
}

/** The checkpoint header's value: the signed note, base64 (a note has newlines, a header may not). */
export function checkpointHeader(note: string): string {
  return Buffer.from(note, 'utf8').toString('base64');
}

/**
 * The poll's memory on one replica: credential id → (node, secret hash, revoked), node → ETag (or no
 * head yet), and the checkpoint note. Filled from the database rows polls read anyway, emptied by the
 * change feed. It answers only while the feed says it is current (see ChangeFeed).
 *
 * A database read may race a change: it can return the old row after the change's notification has
 * emptied the entry. So every read notes the generation before it starts, and its row is kept only
 * if no change arrived meanwhile.
 */
export class PollCache {
  private readonly credentials = new Map<string, Credential>();
  private readonly heads = new Map<string, Head | null>();
  /** The checkpoint as the poll answer's header carries it: encoded once, not on every poll. */
  private checkpoint: string | null | undefined = undefined;
  private generation = 0;

  constructor(private readonly feed: ChangeFeed) {
    feed.subscribe((change) => this.apply(change));
  }

  /** How many entries memory holds. */
  get size(): { credentials: number; heads: number } {
    return { credentials: this.credentials.size, heads: this.heads.size };
  }

  apply(change: Change): void {
    this.generation++;
    if (change.kind === 'reset') {
      this.credentials.clear();
      this.heads.clear();
      this.checkpoint = undefined;
    } else if (change.kind === 'checkpoint') {
      this.checkpoint = undefined;
    } else {
      const map = change.kind === 'heads' ? this.heads : this.credentials;
      if (change.keys === '*') map.clear();
      else for (const key of change.keys) map.delete(key);
    }
  }

  /** Whether memory may answer now: the change feed is current (and so wakes held watches in time). */
  trusted(): boolean {
    return this.feed.trusted();
  }

  /** The checkpoint header as memory holds it now; undefined when memory does not know it. */
  checkpointNow(): string | null | undefined {
    return this.checkpoint;
  }

  /** The generation a database read starts at: pass it to remember(). */
  mark(): number {
    return this.generation;
  }

  /** Keeps a poll row read from the database, unless a change arrived since `mark` or memory is not trusted. */
  remember(mark: number, credentialId: string, row: PollRow): void {
    if (mark !== this.generation || !this.feed.trusted()) return;
    this.credentials.set(credentialId, { node: row.node, secretHash: row.secret_hash, revoked: row.revoked_at !== null });
    this.heads.set(row.node, row.etag === null ? null : { etag: row.etag });
    this.checkpoint = row.checkpoint === null ? null : checkpointHeader(row.checkpoint);
  }

  /**
   * The answer memory can give on its own: a live credential of `node` whose secret `matches`, and a
   * head whose ETag is one of `tags` — a 304 with that ETag and the checkpoint header. Anything else (not in
   * memory, a refusal, a new version, memory not trusted) is null: the database answers it.
   */
  notModified(credentialId: string, node: string, tags: readonly string[], matches: (secretHash: string) => boolean): { etag: string; checkpoint: string | null } | null {
    if (tags.length === 0 || !this.feed.trusted()) return null;
    const credential = this.credentials.get(credentialId);
    if (!credential || credential.revoked || credential.node !== node) return null;
    const head = this.heads.get(node);
    if (!head || this.checkpoint === undefined || !etagMatches(tags, head.etag)) return null;
    if (!matches(credential.secretHash)) return null;
    return { etag: head.etag, checkpoint: this.checkpoint };
  }
}
