import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NODE_NAME_PATTERN, NodeName } from '#contracts';
import { CHANGE_FEED, DB, type ChangeFeed, type Db, BatchLoader } from '../db/index.js';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { appliedWait, parsePreferWait, refusalRetryAfter, watchDeadline } from './prefer-wait.js';
import { WatchHub, type HeldWatch } from './watch-hub.js';
import { LOG, Metrics, KEYS, type SigningKeyStore } from '../core/index.js';
import { DomainError, parseInput, sendProblem, toProblem, requestIdOf } from '../common/index.js';
import { bearerOf, parseSecret, secretMatches, type ParsedSecret, AuthService, refusedNodeCredential } from '../identity/index.js';
import { ContactLog } from '../fleet/index.js';
import { checkpointHeader, confirmHeader, etagMatches, ifNoneMatchTags, PollCache } from './poll-cache.js';
import { BundleSigner } from './head-bundle.js';
import { readPollRows, type PollRead } from './poll-rows.js';
import { TreeProofs, treeHeldOf, withStampLeaf, type TreeHeld } from './tree-memory.js';
import { compactTreeCheckpoint, encodeStampLeaf, stampLeafOf, TREE_CHECKPOINT_HEADER } from '#bundle';

/** A poll answer for a head whose publish asked for operator confirmation: its window and, once confirmed, who (confirmHeader). */
export const CONFIRM_HEADER = 'florete-confirm';

/** Every poll answer, 200 or 304, carries the latest signed checkpoint (base64 of the note): freshness costs no request and no signature. */
export const CHECKPOINT_HEADER = 'florete-checkpoint';

/** The poll route, as Fastify's router writes it. */
export const POLL_PATH = '/v1/nodes/:node/bundle';
const POLL_ROUTE = `GET ${POLL_PATH}`;
const PREFIX = '/v1/nodes/';
const SUFFIX = '/bundle';

type PollRequest = FastifyRequest<{ Params: { node: string } }>;

/** RFC 7240: the wait a held answer was given, so the agent knows the coordinator watched (a 304 without it was not held). */
export const PREFERENCE_APPLIED = 'preference-applied';

/** The expiry's resolution: a held watch ends at most this much after its deadline. */
const WATCH_TICK_MS = 250;
/** Retry-After on a refused watch is spread over this many seconds. */
const REFUSAL_SPREAD_SECONDS = 10;
/** The most credentials one poll read asks for: a change waking 10,000 watches reads their rows in 10 queries. */
const POLL_READ_BATCH = 1000;

/** A watch the request asked for and was granted: its deadline (performance.now() ms) and the wait applied. */
interface Watch {
  readonly deadline: number;
  readonly applied: number;
  /** It was held and has been woken: an answer now ends a held watch (with Preference-Applied), whatever happens next. */
  readonly woken?: true;
}

/** A request held at the front door and handed on to the route when woken carries its watch, so the route keeps its deadline. */
const HELD_WATCH = Symbol('florete held watch');
type Carrying = IncomingMessage & { [HELD_WATCH]?: Watch };

/** The last short tree checkpoint header made, with the two headers it was made from: nearly every answer carries the same pair. */
let shortTree: { tree: string; checkpoint: string; value: string } | null = null;

/**
 * The tree checkpoint header (`tree`, base64 of the note) of an answer that carries the ledger
 * checkpoint header `checkpoint`: its short form when that checkpoint says all of the note but its
 * root and signature (compactTreeCheckpoint), else as it is.
 */
function treeCheckpointFor(tree: string, checkpoint: string): string {
  if (shortTree?.tree !== tree || shortTree.checkpoint !== checkpoint) {
    const note = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
    shortTree = { tree, checkpoint, value: oneByte(compactTreeCheckpoint(note(tree), note(checkpoint)) ?? tree) };
  }
  return shortTree.value;
}

/**
 * `value` (ASCII) as a flat string of one byte a character. The short tree checkpoint is cut from a
 * note's text, whose signature line's dash makes V8 hold it two bytes a character, and its cut too:
 * with it every 304's header block was two bytes a character, converted to one on every write.
 */
function oneByte(value: string): string {
  return Buffer.from(value, 'latin1').toString('latin1');
}

/**
 * The headers of every poll answer, 304 or 200, from memory or from the database; `tree`, the tree
 * checkpoint and its proofs (TreeProofs), its checkpoint shortened against the ledger checkpoint
 * this answer carries.
 */
function pollHeaders(etag: string, checkpoint: string | null, confirm: string | null, tree: Record<string, string> | null = null): Record<string, string> {
  const headers: Record<string, string> = { etag, 'cache-control': 'no-cache' };
  if (checkpoint) headers[CHECKPOINT_HEADER] = checkpoint;
  if (confirm) headers[CONFIRM_HEADER] = confirm;
  if (tree) {
    Object.assign(headers, tree);
    const note = tree[TREE_CHECKPOINT_HEADER];
    if (note && checkpoint) headers[TREE_CHECKPOINT_HEADER] = treeCheckpointFor(note, checkpoint);
  }
  return headers;
}

/** What memory answers a 304 with. */
interface Current {
  readonly etag: string;
  readonly checkpoint: string | null;
  readonly confirm: string | null;
  /** The tree checkpoint note; null when the ledger has none. */
  readonly tree: string | null;
}

/**
 * The poll path: `GET /v1/nodes/{node}/bundle`, the one request every node makes every few seconds.
 *
 * An agent whose version is current is answered 304 from this replica's memory, with no database
 * work (PollCache, ChangeFeed); the poll is its contact, noted in memory and written in batches
 * (ContactLog). Anything else (a new version, a refusal, memory not current) is one indexed read,
 * made together with the other misses of the same event-loop turn (BatchLoader): a change that wakes
 * thousands of held watches reads their rows in a few queries, not one each. A new version is signed
 * here, when its node fetches it (BundleSigner, whose blob reads are batched the same way): a
 * publish stamps heads and signs nothing, and each bundle is fetched about once, by its own node.
 *
 * Two doors, one answer:
 * - the front door sits on the HTTP server, before Fastify: a plain, well-formed poll that memory can
 *   answer 304 is answered there, with what the route would have sent (ETag, Cache-Control, the
 *   checkpoint) and counted in the same metrics. At fleet scale nearly every request is this one,
 *   and the framework's hooks (Nest's six, middleware, ours) were most of its cost;
 * - everything else (a miss, a new version, a refusal, an odd URL, a body) goes on to the Fastify
 *   route, which has the hardening hooks, the request log and problem+json errors. It is a plain
 *   Fastify route, not a Nest controller: the poll authenticates itself with the node credential
 *   it carries, so Nest's guard and parameter decorators would add nothing but their cost.
 */
@Injectable()
export class PollRoute implements BeforeApplicationShutdown, OnApplicationShutdown {
  private closing = false;
  /** Every watch this replica holds (see WatchHub): woken by the change feed, ended by one expiry tick. */
  readonly hub: WatchHub;
  private readonly maxWait: number;
  private behind: ((req: IncomingMessage, res: ServerResponse) => void)[] = [];
  private server: Server | null = null;
  private ticker: NodeJS.Timeout | null = null;
  /** The database's answers, batched: the polls and woken watches of one event-loop turn are read together. */
  readonly reads: BatchLoader<string, PollRead>;
  readonly signer: BundleSigner;
  /** The tree's proofs, from this replica's memory of it. */
  readonly proofs: TreeProofs;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(CHANGE_FEED) feed: ChangeFeed,
    @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig,
    @Inject(KEYS) keys: SigningKeyStore,
    @Inject(LOG) private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly auth: AuthService,
    private readonly cache: PollCache,
    private readonly contacts: ContactLog,
    @Inject(TreeProofs) proofs: TreeProofs,
  ) {
    this.proofs = proofs;
    this.maxWait = config.watch.maxWaitSeconds;
    this.reads = new BatchLoader((ids) => readPollRows(db.kysely, ids), POLL_READ_BATCH);
    this.signer = new BundleSigner(db.kysely, keys);
    this.hub = new WatchHub(
      { limit: config.watch.limit, tickMs: WATCH_TICK_MS },
      () => performance.now(),
      (nodes) => this.readEtags(nodes),
      (err) => this.log.error({ err }, 'answering a held watch failed'),
    );
    // After PollCache's own subscription (it is constructed first): a woken watch finds memory already emptied.
    feed.subscribe((change) => this.hub.apply(change));
    // A new tree checkpoint (this replica's append or another's): memory catches up before polls ask for its proofs.
    feed.subscribe((change) => {
      if (change.kind === 'checkpoint') this.warmTree();
    });
    metrics.watchesHeld = () => this.hub.size;
  }

  private warming: Promise<void> | null = null;
  private warmAgain = false;

  /** Reads the signed tree checkpoint and makes its proofs ready; one at a time, once more if asked meanwhile. */
  private warmTree(): void {
    if (this.warming) {
      this.warmAgain = true;
      return;
    }
    this.warmAgain = false;
    this.warming = (async () => {
      const row = await this.db.kysely.selectFrom('ledger_checkpoint').select('tree_note').where('id', '=', 1).executeTakeFirst();
      if (row?.tree_note) await this.proofs.ready(row.tree_note);
    })()
      .catch((err: unknown) => this.log.error({ err }, 'the ledger tree in memory could not catch up'))
      .finally(() => {
        this.warming = null;
        if (this.warmAgain && !this.closing) this.warmTree();
      });
  }

  /**
   * Before the server closes (it waits for open requests): held watches are answered 503 with
   * Retry-After, so their agents reconnect to another replica, spread, and no new one is held.
   */
  beforeApplicationShutdown(): void {
    this.closing = true;
    if (this.ticker) clearInterval(this.ticker);
    this.hub.close();
  }

  /** Nest's own door answers 503 once shutdown begins; this one then sends everything on to it. */
  onApplicationShutdown(): void {
    this.closing = true;
    this.hub.close();
  }

  /**
   * One tick for every held watch: ends those whose wait ran out, and, while the change feed is not
   * trusted, wakes every watch held (each was held while it was trusted, and a change the feed missed
   * since would leave it held past a poll); woken then, each is answered, not held again. Waking only
   * when trust is lost is not enough: trust regained and lost again between two ticks goes unseen.
   */
  private tick(): void {
    if (this.hub.size > 0 && !this.cache.trusted()) this.hub.wakeAll();
    this.hub.expireDue();
  }

  /** The current ETags of `nodes`, in reads of a few thousand: how a change of every head is narrowed to the held nodes it moved. */
  private async readEtags(nodes: readonly string[]): Promise<Map<string, string | null>> {
    const etags = new Map<string, string | null>();
    for (let i = 0; i < nodes.length; i += 5000) {
      const rows = await this.db.kysely
        .selectFrom('node_heads')
        .select(['node', 'etag'])
        .where('node', 'in', nodes.slice(i, i + 5000))
        .execute();
      for (const r of rows) etags.set(r.node, r.etag);
    }
    return etags;
  }

  /** Whether a watch may be held now: the feed must be current, or a change could pass it by. */
  private canHold(): boolean {
    return !this.closing && this.hub.hasRoom() && this.cache.trusted();
  }

  /** The watch a request asks for (Prefer: wait), or null; a malformed Prefer is refused, and nothing is held. */
  private watchOf(req: IncomingMessage): Watch | null {
    const carried = (req as Carrying)[HELD_WATCH];
    if (carried) return carried;
    const prefer = parsePreferWait(req.headers.prefer);
    if (!prefer.ok) throw new DomainError('invalid_prefer', prefer.reason);
    if (!prefer.wait || this.maxWait === 0) return null;
    const applied = appliedWait(prefer.wait, this.maxWait);
    return { deadline: watchDeadline(performance.now(), applied, Math.random()), applied };
  }

  /** Why a watch that would be held is not: a 503 with Retry-After, spread; null when it is answered as a plain poll instead. */
  private refusal(): DomainError | null {
    if (this.closing || this.hub.closing) return new DomainError('shutting_down', 'this replica is stopping: watch again, the next replica will hold it');
    if (!this.hub.hasRoom())
      return new DomainError(
        'too_many_watches',
        `this replica holds ${this.hub.limit} watches, its limit (FLORETE_WATCH_LIMIT): watch again after Retry-After`,
      );
    return null;
  }

  private retryAfter(): string {
    return String(refusalRetryAfter(REFUSAL_SPREAD_SECONDS, Math.random()));
  }

  register(fastify: FastifyInstance): void {
    this.frontDoor(fastify.server as Server);
    this.ticker = setInterval(() => this.tick(), WATCH_TICK_MS);
    this.ticker.unref();
    fastify.get(POLL_PATH, (req: PollRequest, reply: FastifyReply) => {
      // A request the front door held and handed on was counted there.
      if (!(req.raw as Carrying)[HELD_WATCH]) this.metrics.polls++;
      try {
        const token = bearerOf(req.headers.authorization);
        const credential = token ? parseSecret(token) : null;
        if (credential?.kind !== 'fln') return this.answering(reply, this.refuse(req, credential));
        const name = parseInput(NodeName, req.params.node, 'path');
        const tags = ifNoneMatchTags(req.headers['if-none-match']);
        const watch = this.watchOf(req.raw);
        const holds = treeHeldOf(req.headers);
        const memory = this.fromMemory(credential, name, tags);
        const tree = memory ? this.treeHeaders(memory.tree, holds) : null;
        if (!memory || tree === undefined) return this.answering(reply, this.fromDatabase(reply, credential, name, tags, watch));
        if (watch) return this.answering(reply, this.held(reply, credential, name, tags, memory, watch, this.cache.mark()));
        this.metrics.polls304++;
        void reply
          .headers(pollHeaders(memory.etag, memory.checkpoint, memory.confirm, tree))
          .status(304)
          .send();
      } catch (err) {
        sendProblem(reply, toProblem(err, this.log));
      }
      // Answered synchronously: Fastify wants nothing returned then (a returned reply is sent again).
      return undefined;
    });
  }

  /** Puts the front door before the server's own request listeners (Fastify's), for HTTP and HTTPS alike. */
  private frontDoor(server: Server): void {
    const behind = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    this.behind = behind;
    this.server = server;
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.answeredAtTheDoor(req, res)) return;
      for (const listener of behind) listener.call(server, req, res);
    });
  }

  /**
   * Only the plainest poll: GET, the path exactly as a node sends it (no escapes, no query), no
   * body, a well-formed node credential, and memory sure of a 304. Anything unusual is declined
   * before anything is sent, so the route answers it the full way.
   */
  private answeredAtTheDoor(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url;
    if (this.closing || req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX) || !url.endsWith(SUFFIX)) return false;
    const name = url.slice(PREFIX.length, url.length - SUFFIX.length);
    if (!NODE_NAME_PATTERN.test(name) || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return false;
    const started = performance.now();
    const token = bearerOf(req.headers.authorization);
    const credential = token ? parseSecret(token) : null;
    if (credential?.kind !== 'fln') return false;
    let watch: Watch | null = null;
    if (req.headers.prefer !== undefined) {
      // A malformed Prefer, or a watch that cannot be held now, is the route's to answer.
      const prefer = parsePreferWait(req.headers.prefer);
      if (!prefer.ok) return false;
      if (prefer.wait && this.maxWait > 0) {
        if (!this.canHold()) return false;
        const applied = appliedWait(prefer.wait, this.maxWait);
        watch = { deadline: watchDeadline(performance.now(), applied, Math.random()), applied };
      }
    }
    const tags = ifNoneMatchTags(req.headers['if-none-match']);
    const holds = treeHeldOf(req.headers);
    // Its tree headers first (no contact noted for a poll sent on): memory may not have caught up with the tree's checkpoint yet.
    const tree = this.cache.treeNow();
    const treeHeaders = tree === undefined ? undefined : this.treeHeaders(tree, holds);
    if (treeHeaders === undefined) return false;
    const memory = this.fromMemory(credential, name, tags);
    if (!memory || memory.tree !== tree) return false;
    // Counted here only once answered: a poll sent on to the route is counted there.
    this.metrics.polls++;
    if (watch) {
      this.holdAtTheDoor(req, res, credential, name, memory.etag, memory.confirm, watch, holds);
      return true;
    }
    this.metrics.polls304++;
    res.writeHead(304, pollHeaders(memory.etag, memory.checkpoint, memory.confirm, treeHeaders)).end();
    const seconds = (performance.now() - started) / 1000;
    this.metrics.observe(POLL_ROUTE, 304, seconds);
    if (this.log.isLevelEnabled('debug'))
      this.log.debug(
        { req_id: requestIdOf(req), method: 'GET', path: url, client: req.socket.remoteAddress, status: 304, ms: Math.round(seconds * 1000) },
        'request',
      );
    return true;
  }

  /**
   * The tree headers of an answer carrying the tree checkpoint `note` to a node holding what `holds`
   * says: null when there is no tree checkpoint to carry, undefined when memory cannot make them
   * now: it has not caught up with that checkpoint (it starts to, and the database's path waits), or
   * the node holds a larger tree than `note` (another replica, ahead of this one, showed it: the
   * database's path reads the current checkpoint and catches memory up to it before answering).
   */
  private treeHeaders(note: string | null, holds: TreeHeld, leaf: number | null = null): Record<string, string> | null | undefined {
    if (note === null) return null;
    if (this.proofs.behind(note, holds.size)) return undefined;
    const made = this.proofs.headers(note, holds, leaf);
    if (made) return made;
    this.proofs.ready(note).catch((err: unknown) => this.log.error({ err }, 'the ledger tree in memory could not catch up'));
    return undefined;
  }

  /** A 304 memory can answer with certainty (a cache hit, and a contact); null when it cannot. */
  private fromMemory(credential: ParsedSecret, name: string, tags: readonly string[]): Current | null {
    const memory = this.cache.notModified(credential.id, name, tags, (hash) => secretMatches(credential.secret, hash));
    if (!memory) return null;
    this.metrics.pollCache.hit();
    this.contacts.seen(name);
    return memory;
  }

  /**
   * The headers of a 304 that ends a held watch: the checkpoints as memory has them now, if it knows
   * them, has the tree's proofs ready and its tree is not smaller than the node's, else those the
   * watch was held with (read from the database, which the node's tree is never ahead of).
   */
  private expiredHeaders(current: Current, watch: Watch, holds: TreeHeld): Record<string, string> {
    const now = this.cache.checkpointNow();
    const treeNow = this.cache.treeNow();
    const fresh =
      now !== undefined && treeNow !== undefined && (treeNow === null || (this.proofs.isReady(treeNow) && !this.proofs.behind(treeNow, holds.size)));
    const tree = fresh ? treeNow : current.tree;
    return {
      ...pollHeaders(current.etag, fresh ? now : current.checkpoint, current.confirm, tree === null ? null : (this.proofs.headers(tree, holds) ?? null)),
      [PREFERENCE_APPLIED]: `wait=${watch.applied}`,
    };
  }

  /**
   * Holds a plain watch at the front door, with nothing but its entry in the hub: expired, it is
   * answered 304 here; woken, it is handed on to the route as if it had just arrived (carrying its
   * deadline), which answers it from the database and may hold it again.
   */
  private holdAtTheDoor(
    req: IncomingMessage,
    res: ServerResponse,
    credential: ParsedSecret,
    name: string,
    etag: string,
    confirm: string | null,
    watch: Watch,
    holds: TreeHeld,
  ): void {
    const current: Current = { etag, checkpoint: this.cache.checkpointNow() ?? null, confirm, tree: this.cache.treeNow() ?? null };
    const gone = () => this.hub.release(held);
    const held: HeldWatch = {
      node: name,
      credentialId: credential.id,
      etag,
      deadline: watch.deadline,
      wake: () => {
        res.off('close', gone);
        this.metrics.watches.woken++;
        this.metrics.held.add(req);
        (req as Carrying)[HELD_WATCH] = { ...watch, woken: true };
        for (const listener of this.behind) listener.call(this.server, req, res);
      },
      expire: () => {
        res.off('close', gone);
        this.metrics.watches.expired++;
        this.metrics.polls304++;
        this.contacts.seen(name);
        res.writeHead(304, this.expiredHeaders(current, watch, holds)).end();
      },
      drop: () => {
        res.off('close', gone);
        this.metrics.watches.refused++;
        const problem = toProblem(new DomainError('shutting_down', 'this replica is stopping: watch again, the next replica will hold it'), this.log);
        res
          .writeHead(problem.status, { 'content-type': 'application/problem+json', 'retry-after': this.retryAfter(), connection: 'close' })
          .end(JSON.stringify(problem));
      },
    };
    this.hub.hold(held);
    res.once('close', gone);
  }

  /**
   * Holds a watch the route answers (it came with a miss, or was woken and is still current): 304
   * when it expires, the database's answer again when woken. `mark` is the cache generation the
   * answer was read at: a change to its credential or its node since then may have been missed, so
   * the watch is woken at once.
   */
  private held(
    reply: FastifyReply,
    credential: ParsedSecret,
    name: string,
    tags: readonly string[],
    current: Current,
    watch: Watch,
    mark: number,
  ): Promise<void> {
    const holds = treeHeldOf(reply.request.headers);
    if (performance.now() >= watch.deadline) {
      this.metrics.polls304++;
      void reply
        .headers(this.expiredHeaders(current, watch, holds))
        .status(304)
        .send();
      return Promise.resolve();
    }
    if (!this.canHold()) {
      const refused = this.refusal();
      if (refused) {
        this.metrics.watches.refused++;
        void reply.header('retry-after', this.retryAfter());
        return Promise.reject(refused);
      }
      // The feed is not current, so nothing is held: answered now. A watch that was held (woken to be
      // re-checked when the feed stopped being trusted) ends as a held watch ends, with its
      // Preference-Applied, and its agent watches again; a new one is answered as a plain poll, without
      // it, and its agent knows it was not held.
      this.metrics.polls304++;
      void reply
        .headers(
          watch.woken
            ? this.expiredHeaders(current, watch, holds)
            : pollHeaders(current.etag, current.checkpoint, current.confirm, current.tree === null ? null : (this.proofs.headers(current.tree, holds) ?? null)),
        )
        .status(304)
        .send();
      return Promise.resolve();
    }
    this.metrics.held.add(reply.raw.req ?? reply.request.raw);
    return new Promise<void>((resolve, reject) => {
      const gone = () => {
        this.hub.release(held);
        resolve();
      };
      const held: HeldWatch = {
        node: name,
        credentialId: credential.id,
        etag: current.etag,
        deadline: watch.deadline,
        wake: () => {
          reply.raw.off('close', gone);
          this.metrics.watches.woken++;
          this.fromDatabase(reply, credential, name, tags, { ...watch, woken: true }).then(resolve, reject);
        },
        expire: () => {
          reply.raw.off('close', gone);
          this.metrics.watches.expired++;
          this.metrics.polls304++;
          this.contacts.seen(name);
          void reply
            .headers(this.expiredHeaders(current, watch, holds))
            .status(304)
            .send();
          resolve();
        },
        drop: () => {
          reply.raw.off('close', gone);
          this.metrics.watches.refused++;
          void reply.header('retry-after', this.retryAfter()).header('connection', 'close');
          reject(new DomainError('shutting_down', 'this replica is stopping: watch again, the next replica will hold it'));
        },
      };
      this.hub.hold(held);
      reply.raw.once('close', gone);
      if (this.cache.changedSince(mark, credential.id, name) && this.hub.release(held)) held.wake();
    });
  }

  /** Sends what `work` throws as a problem; the reply is returned for Fastify, as an async route must. */
  private async answering(reply: FastifyReply, work: Promise<void>): Promise<FastifyReply> {
    try {
      await work;
    } catch (err) {
      sendProblem(reply, toProblem(err, this.log));
    }
    return reply;
  }

  /** A poll without a node credential: a valid API token is forbidden here, anything else unauthenticated. */
  private async refuse(req: PollRequest, credential: ParsedSecret | null): Promise<void> {
    if (credential?.kind === 'flt') {
      // A valid API token is known but not allowed here; only an invalid one is a 401.
      await this.auth.authenticate(req.headers.authorization);
      throw new DomainError('forbidden', 'bundles are read only by the node they belong to, with its node credential');
    }
    throw new DomainError('unauthenticated', 'a node credential is required: Authorization: Bearer <credential>');
  }

  /**
   * The tree headers of an answer read from the database: its tree checkpoint, the proof from what
   * the node holds (`holds`) and, with a new bundle, the inclusion proof of the event that stamped
   * it and the rest of that event (the leaf header). Memory catches up with the checkpoint first.
   */
  private async fromTree(row: PollRead, holds: TreeHeld, modified: boolean): Promise<Record<string, string> | null> {
    const note = row.tree_note!;
    await this.proofs.ready(note);
    const leaf = modified && row.position !== null ? Number(row.position) - 1 : null;
    const headers = this.proofs.headers(note, holds, leaf);
    if (!headers) throw new Error('the ledger tree in memory moved back while a poll was answered');
    if (leaf !== null && row.stamp_prev_hash !== null && row.stamp_revision !== null)
      return withStampLeaf(
        headers,
        encodeStampLeaf(
          stampLeafOf({ prev_hash: row.stamp_prev_hash, revision: row.stamp_revision, meta: row.stamp_meta ?? {}, extra: row.stamp_extra ?? {} }),
        ),
      );
    return headers;
  }

  private async fromDatabase(reply: FastifyReply, credential: ParsedSecret, name: string, tags: readonly string[], watch: Watch | null = null): Promise<void> {
    this.metrics.pollCache.miss();
    const mark = this.cache.mark();
    // Read with every other poll and woken watch of this turn (BatchLoader), each its own credential's row.
    const row = await this.reads.load(credential.id);
    const ok = secretMatches(credential.secret, row?.secret_hash ?? null);
    if (!row || !ok) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    this.cache.remember(mark, credential.id, row);
    if (row.revoked_at) throw refusedNodeCredential(row.node, row.revoked_reason, row.retired ? row.version : null);
    if (row.node !== name) throw new DomainError('forbidden', `node credential of ${row.node} may not read the bundle of ${name}`);
    this.contacts.seen(name);
    if (!row.etag) throw new DomainError('unknown_node', `nothing has been published for ${name} yet`, { node: name });
    const confirm = confirmHeader(row);
    const modified = !etagMatches(tags, row.etag);
    const tree = row.tree_note === null ? null : await this.fromTree(row, treeHeldOf(reply.request.headers), modified);
    const headers = pollHeaders(row.etag, row.checkpoint === null ? null : checkpointHeader(row.checkpoint), confirm, tree);
    if (watch) headers[PREFERENCE_APPLIED] = `wait=${watch.applied}`;
    if (!modified) {
      if (watch)
        return this.held(
          reply,
          credential,
          name,
          tags,
          { etag: row.etag, checkpoint: headers[CHECKPOINT_HEADER] ?? null, confirm, tree: row.tree_note },
          watch,
          mark,
        );
      this.metrics.polls304++;
      void reply.headers(headers).status(304).send();
      return;
    }
    // Every column of a head row is set, so the left join's are all there once its ETag is.
    const jws = await this.signer.sign(row as { [K in keyof typeof row]: NonNullable<(typeof row)[K]> }, row.etag);
    this.metrics.bundlesSigned++;
    void reply.headers(headers).status(200).header('content-type', 'application/jose').send(jws);
  }
}
