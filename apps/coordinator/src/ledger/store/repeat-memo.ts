import type { PublishResponse } from '#contracts';
import type { LedgerHead } from './read-head.js';

/** What this process last published, by the digest of the request body it came in. */
export interface PublishedBody {
  /** sha256 of the request body's text, as the JSON parser received it. */
  readonly digest: string;
  /** The ledger head once that publish was decided: its last event, or the head it left alone. */
  readonly at: LedgerHead;
  /** Nodes in its tree: a repeat finds every one of them unchanged. */
  readonly nodes: number;
  /** The position the request required, if it named one. */
  readonly expectedPosition?: number;
}

/**
 * The answer to a request body this process published last, sent again while nothing was appended
 * since: the usual repeat of a deployment pipeline or a reconcile loop, which publishes the same
 * compiled tree on every run.
 *
 * Deciding a publish is a function of its tree and the heads. Right after a tree was decided, every
 * node in it has that tree's set as its head, and with `prune` every node outside it is retired, so
 * deciding the same tree again changes nothing and finds all its nodes unchanged: no blob is needed
 * and no node's eligibility is asked (both concern changed nodes only). That stays true exactly
 * as long as the ledger head is the one the publish left: any append (another replica's publish,
 * a rollback, a retirement, an enrolment, a key rotation) moves the head and makes this forget.
 * Bytes equal to a body that was parsed, checked and accepted are accepted again, so the repeat
 * skips parsing them into a tree, checking and comparing 10,000 nodes, and the ledger lock.
 *
 * One body is kept: the last one published. A body that named `expected_position` repeats only
 * while the ledger is still at that position (it cannot be after a publish that changed anything);
 * otherwise the full path refuses it, as it must.
 */
export class RepeatMemo {
  private last: PublishedBody | null = null;

  /** Keeps a published body unless one decided at a later head is already kept (writes may finish out of order). */
  keep(published: PublishedBody): void {
    if (!this.last || published.at.position >= this.last.at.position) this.last = published;
  }

  /** Whether `digest` is the body kept: only then is the ledger head worth reading. */
  knows(digest: string): boolean {
    return this.last?.digest === digest;
  }

  /**
   * The answer to `digest` sent again with the ledger at `head`, or null when the publish must be
   * decided in full: another body, an append since, or a required position the ledger is not at.
   */
  answer(digest: string, head: LedgerHead): PublishResponse | null {
    const p = this.last;
    if (!p || p.digest !== digest || p.at.position !== head.position || p.at.hash !== head.hash) return null;
    if (p.expectedPosition !== undefined && p.expectedPosition !== head.position) return null;
    return { publish_id: null, position: head.position, changed: [], unchanged: p.nodes };
  }
}
