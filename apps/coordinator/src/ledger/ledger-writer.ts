import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { EventBus } from '@nestjs/cqrs';
import type { Transaction } from 'kysely';
import type { PublishResponse } from '#contracts';
import { CHANGE_FEED, DB, type ChangeFeed, type Db, type Database } from '../db/index.js';
import { KEYS, type SigningKeyStore } from '../core/index.js';
import { LARGE_WORK, largeWorkBegun, releaseMemorySoon } from '#runtime';
import { DomainError } from '../common/index.js';
import { decide } from './domain/ledger.decider.js';
import { governedBy } from './domain/changed-nodes.js';
import type { IdentityRecorded } from './domain/ledger.events.js';
import { decidePackagePush, type PushedPackage } from './domain/package.decider.js';
import { LedgerAppended } from './ledger-appended.event.js';
import { appendUnderLock, type AppendProjection } from './store/append-path.js';
import { recordIdentity } from './store/record-identity.js';
import { loadDecisionInput, type LedgerRequest } from './store/decision-input.js';
import { advanceHeads, HeadsMemo, type HeadsSnapshot } from './store/heads-memo.js';
import { RepeatMemo, type PublishedBody } from './store/repeat-memo.js';
import type { LedgerProjection } from './ledger-projection.js';
import {
  CHECKPOINT_SIGNER,
  INELIGIBLE_NODES,
  LEDGER_BLOBS,
  RECORDED_PACKAGES,
  type AdmitChanges,
  type CheckpointSigner,
  type IneligibleNodes,
  type LedgerBlobs,
  type RecordedPackages,
} from './ledger-ports.js';
import { readLedgerHead, readStreamRevision } from './store/read-head.js';

export interface WriteOptions {
  readonly actor: string;
  readonly expectedPosition?: number;
  /** sha256 of the publish request's body, when it came over HTTP: kept to answer its repeat (RepeatMemo). */
  readonly bodyDigest?: string;
  /**
   * What must commit with the appended events or not at all, run in their transaction once they are
   * in (only when something was appended): a lost node's credentials revoked with its retirement.
   */
  readonly alongside?: (trx: Transaction<Database>, result: PublishResponse) => Promise<void>;
  /**
   * Asked under the lock once the decision is made, before anything is written, with the nodes it
   * changes or settles (governedBy), even none: a throw refuses the request whole. What a scoped token may
   * change is checked here, and what else the request carries (a publish's node labels) is written.
   */
  readonly admit?: AdmitChanges;
}

/**
 * The ledger's writer. A request goes straight down, in one transaction, by the one append path
 * (appendUnderLock): lock, check the expected position, read the state the decision needs, decide,
 * append, hand the events to the read models' projection, sign a checkpoint. A thrown error rolls everything back, read models
 * included; only after the commit is the append announced on the event bus.
 */
@Injectable()
export class LedgerWriter {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    @Inject(CHECKPOINT_SIGNER) private readonly signer: CheckpointSigner,
    @Inject(LEDGER_BLOBS) private readonly blobs: LedgerBlobs,
    @Inject(INELIGIBLE_NODES) private readonly ineligible: IneligibleNodes,
    @Inject(RECORDED_PACKAGES) private readonly packages: RecordedPackages,
    @Optional() private readonly events?: EventBus,
    @Optional() @Inject(CHANGE_FEED) private readonly feed?: ChangeFeed,
  ) {}

  private projection: LedgerProjection | null = null;
  /** Every node's head as of the last write this process committed (see HeadsMemo). */
  private readonly heads = new HeadsMemo();
  /** The body this process last published, to answer it again without deciding it (see RepeatMemo). */
  private readonly repeats = new RepeatMemo();

  /** The read models' projection, registered once by the projections module (or a test harness). */
  projectInto(projection: LedgerProjection): void {
    this.projection = projection;
  }

  async write(options: WriteOptions, request: LedgerRequest): Promise<PublishResponse> {
    // A tree of thousands of nodes: no memory-reducing collection while it is decided and written.
    const over = request.type === 'publish_tree' && request.nodes.size >= LARGE_WORK ? largeWorkBegun() : null;
    try {
      return await this.writeNow(options, request);
    } finally {
      over?.();
    }
  }

  private async writeNow(options: WriteOptions, request: LedgerRequest): Promise<PublishResponse> {
    await this.keys.reloadIfChanged();
    const publishId = randomUUID();
    let after: HeadsSnapshot | null = null;
    let published: PublishedBody | null = null;
    let appended = false;
    const remember = (at: { position: number; hash: string }): void => {
      // A rollout's publish is not answered from memory: its repeat meets the rollout it started.
      if (
        options.bodyDigest !== undefined &&
        request.type === 'publish_tree' &&
        !request.rollout &&
        !request.supersedeRollout &&
        request.confirmWithin === undefined
      ) {
        published = {
          digest: options.bodyDigest,
          at: { position: at.position, hash: at.hash },
          nodes: request.nodes.size,
          ...(options.expectedPosition !== undefined ? { expectedPosition: options.expectedPosition } : {}),
        };
      }
    };
    const result = await this.db.kysely.transaction().execute(async (trx): Promise<PublishResponse> => {
      const { stored, result: decided } = await appendUnderLock(
        trx,
        this.signer,
        async ({ head, trust }) => {
          if (options.expectedPosition !== undefined && options.expectedPosition !== head.position) {
            throw new DomainError(
              'stale_position',
              `the ledger is at position ${head.position}, not the expected ${options.expectedPosition}: re-plan and publish again`,
              { position: head.position },
            );
          }
          const { command, heads, allHeads } = await loadDecisionInput(
            trx,
            request,
            this.heads.at(head),
            (n, prune) => this.heads.wantsAll(n, prune),
            publishId,
            { blobs: this.blobs, ineligible: this.ineligible },
          );
          const decision = decide(command, heads, { publishId });
          await options.admit?.(trx, governedBy(decision));
          // A stamp names the key its bundle is signed with: the trust head's signer, read under the lock.
          // One meta object for each kind, so the append writes its text once for the publish.
          const stampMeta = { actor: options.actor, kid: trust.signingKid };
          const otherMeta = { actor: options.actor };
          const inputs = decision.events.map((event) => ({ event, meta: event.type === 'node_set_stamped' ? stampMeta : otherMeta }));
          return { inputs, result: { decision, allHeads, head } };
        },
        this.projectionFor(trx),
      );
      const { decision, allHeads, head } = decided;
      if (stored.length === 0) {
        if (allHeads) after = { at: head, heads: allHeads };
        remember(head);
        return { publish_id: null, position: head.position, changed: [], unchanged: decision.unchanged };
      }
      const last = stored[stored.length - 1];
      remember(last);
      appended = true;
      if (allHeads) {
        const stamps = decision.events.flatMap((e) => (e.type === 'node_set_stamped' ? [e.data] : []));
        after = advanceHeads(allHeads, stamps, { position: last.position, hash: last.hash });
      }
      const stampsAny = decision.events.some((e) => e.type === 'node_set_stamped');
      const planned = decision.events.find((e) => e.type === 'rollout_planned');
      const answer: PublishResponse = {
        publish_id: stampsAny || planned ? publishId : null,
        position: last.position,
        changed: [...decision.changed],
        unchanged: decision.unchanged,
        ...(decision.acceptedIneligible.length > 0
          ? { accepted_ineligible: decision.acceptedIneligible.map((n) => ({ node: n.node, failed_briefing: [...n.failed_briefing] })) }
          : {}),
        ...(planned?.type === 'rollout_planned'
          ? { rollout: { id: planned.data.rollout_id, waves: planned.data.waves.map((w) => w.length), released: 1 } }
          : {}),
      };
      await options.alongside?.(trx, answer);
      return answer;
    });
    // Kept only once committed: a write rolled back leaves the snapshot of the last one that was not.
    if (after) this.heads.keep(after);
    if (published) this.repeats.keep(published);
    // After the commit, never inside it: the git mirror follows asynchronously.
    if (appended) this.events?.publish(new LedgerAppended(result.position));
    // A publish changing thousands of nodes grew the heap several times over what stays alive.
    if (appended && result.changed.length >= LARGE_WORK) releaseMemorySoon();
    // New heads (or a head's confirmation): answered only once no replica's memory serves the old ones.
    if (appended) await this.settle();
    return result;
  }

  /** Whether `bodyDigest` is the body kept: a body this process published, so once parsed and accepted. */
  knowsBody(bodyDigest: string): boolean {
    return this.repeats.knows(bodyDigest);
  }

  /**
   * The answer to a publish whose request body (by its sha256) is the one this process published
   * last, when nothing was appended since; null when it must be decided (RepeatMemo). Reads only the
   * ledger head, without the lock: a publish still in flight has not moved it, and this answer comes
   * before it, as it would have had it taken the lock first.
   */
  async repeated(bodyDigest: string): Promise<PublishResponse | null> {
    if (!this.repeats.knows(bodyDigest)) return null;
    return this.repeats.answer(bodyDigest, await readLedgerHead(this.db.kysely));
  }

  /**
   * Records a pushed package: the file into the blob store and a package_pushed event, in one
   * transaction by the ledger's one append path (so under its lock, and with its checkpoint), so two
   * pushes of one version cannot both win. The same bytes
   * again record nothing; other bytes for a recorded version are refused (see decidePackagePush).
   */
  async pushPackage(pushed: PushedPackage, content: Uint8Array, actor: string): Promise<{ readonly created: boolean; readonly position: number }> {
    const result = await this.db.kysely.transaction().execute(async (trx) => {
      const { stored, result: recorded } = await appendUnderLock(
        trx,
        this.signer,
        async () => {
          const found = await this.packages.find(trx, pushed.name, pushed.version, pushed.architecture);
          const stream = `package:${pushed.name}` as const;
          const decision = decidePackagePush(pushed, found, (await readStreamRevision(trx, stream)) + 1);
          if (decision.kind === 'already_pushed') return { inputs: [], result: decision.position };
          await this.blobs.put(trx, pushed.sha256, content);
          return { inputs: [{ event: decision.event, meta: { actor } }], result: null };
        },
        this.projectionFor(trx),
      );
      return stored.length > 0 ? { created: true, position: stored[0].position } : { created: false, position: recorded as number };
    });
    // The mirror records no packages, but its checkpoint follows the ledger past the event.
    if (result.created) this.events?.publish(new LedgerAppended(result.position));
    return result;
  }

  /**
   * Waits until every replica's poll memory reflects what this process committed (ChangeFeed). Every
   * write that changes a poll's answer (new heads, a revoked or new credential) calls it after its
   * commit and before it answers.
   */
  settle(): Promise<void> {
    return this.feed?.settle() ?? Promise.resolve();
  }

  /** Appends an identity event (token issued, enrolled, revoked) to `identity:<subject>` inside the caller's transaction. */
  recordIdentity(trx: Transaction<Database>, subject: string, type: IdentityRecorded['type'], data: Record<string, unknown>, actor: string): Promise<number> {
    return recordIdentity(trx, this.signer, subject, type, data, actor);
  }

  /**
   * The registered read models, as an append inside `trx` asks them to follow it: they move in the
   * appending transaction, so a write with no projection registered is refused, not half done.
   */
  private projectionFor(trx: Transaction<Database>): AppendProjection {
    const projection = this.projection;
    if (!projection) throw new Error('no read-model projection is registered with the ledger writer');
    return {
      stamps: (run, decided) => projection.projectStamps(trx, run, decided),
      rest: (stored) => projection.project(trx, stored, true),
    };
  }
}
