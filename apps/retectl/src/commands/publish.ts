import { BlobArchiveResponse, BlobsMissingResponse, MAX_DIGESTS_PER_ASK, PublishDetail, PublishResponse, RESOURCES_JSON, type NodeLabels } from '#contracts';
import { formatCounts, formatPublishNodes } from '../publish-status.js';
import { formatAge } from '../status.js';
import { z } from 'zod';
import { CoordinatorClient } from '../client.js';
import { refusedKey, RetectlError } from '../errors.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson, plural, trace, traceMs } from '../output.js';
import { countsReporter, publishNodes, waitForPublish, type WaitResult } from '../publish-wait.js';
import { progressBar } from '../progress.js';
import { blobArchive } from '../blob-tar.js';
import { eachInFlight } from '../in-flight.js';
import { formatPublish, LIST_LIMIT, publishResourcesLine } from '../summary.js';
import { parseResources } from '../resources-json.js';
import { loadPublishable } from '../rete-dir.js';
import { explainIneligible, ineligibleLine } from '../ineligible.js';
import { readDelta } from '../delta.js';
import { labelsToSend, type TreeLabels } from '../local-heads.js';
import type { TreeToPublish } from '../tree-to-publish.js';
import { status as rolloutStatus } from './rollout.js';
import { refusePruneInWaves, rolloutPlanLine, rolloutPlanOf, type RolloutFlags } from '../rollout-plan.js';
import type { RolloutPlanInput } from '#contracts';

export interface PublishOptions extends ConnectionFlags, RolloutFlags {
  /** The running rollout this publish replaces (its id or a prefix of 8 characters or more). */
  readonly supersede?: string;
  /** Operator confirmation window, in seconds: the nodes revert unless `retectl confirm` comes in time. */
  readonly confirmWithin?: number;
  readonly dir: string;
  readonly message?: string;
  readonly prune?: boolean;
  readonly expectPosition?: number;
  readonly json?: boolean;
  /** Seconds to wait for the touched nodes to report; undefined: do not wait. */
  readonly waitSeconds?: number;
  /** Ineligible nodes to give new content anyway; the coordinator records the acceptance. */
  readonly allowIneligible?: readonly string[];
  /** Send the whole tree for the coordinator to compare, not only the nodes that differ from their heads. */
  readonly full?: boolean;
  /** List every changed node, not the first LIST_LIMIT. */
  readonly all?: boolean;
}

/** One PUT per blob, for a coordinator without the archive route: this many at a time. */
const UPLOAD_CONCURRENCY = 8;
/** Below this many uploads a bar would only flicker. */
const PROGRESS_THRESHOLD = 10;
/** Blobs per archive request: a large tree goes in a few requests, each well under the coordinator's limit. */
export const ARCHIVE_BLOBS = 20_000;
const ARCHIVE_BYTES = 64 * 1024 * 1024;
/**
 * Requests of a large tree's blobs in flight at once, questions about them and archives alike: while
 * PostgreSQL stores one archive (or answers one question) the coordinator reads the next, so its
 * database and its event loop work side by side. Two, not more: the coordinator holds each archive
 * in memory until it is stored (bench/README.md, bench:publish).
 */
export const BLOB_REQUESTS_IN_FLIGHT = 2;

/**
 * The digests the coordinator has no blob for, asked in slices of at most MAX_DIGESTS_PER_ASK (a
 * 100,000-node tree of two artifacts each names 200,000). `offered` filters the answer: a digest
 * this tree does not hold was never asked about, so there is nothing to send for it.
 */
export async function missingBlobs(
  client: CoordinatorClient,
  digests: readonly string[],
  offered: (sha: string) => boolean,
  perAsk = MAX_DIGESTS_PER_ASK,
): Promise<string[]> {
  const slices: string[][] = [];
  for (let i = 0; i < digests.length; i += perAsk) slices.push(digests.slice(i, i + perAsk));
  const answers = await eachInFlight(slices, BLOB_REQUESTS_IN_FLIGHT, async (slice) => {
    const { body } = await client.call('POST', '/v1/blobs/missing', BlobsMissingResponse, { json: { digests: slice } });
    return body.missing.filter(offered);
  });
  return answers.flat();
}

/** Times the heads are read again when the ledger moves under a delta, before the whole tree is sent. */
const DELTA_ATTEMPTS = 3;

export interface PublishTreeOptions {
  readonly message: string;
  readonly prune?: boolean;
  readonly expectPosition?: number;
  readonly allowIneligible?: readonly string[];
  /** Send every node and let the coordinator compare them all, instead of the nodes that differ. */
  readonly full?: boolean;
  /** Whether to draw a bar while blobs upload. */
  readonly progress?: boolean;
  /** Release the changed nodes in waves. */
  readonly rollout?: RolloutPlanInput;
  readonly supersede?: string;
  readonly confirmWithin?: number;
  /**
   * Every node's tags and groups (nodeLabels): a delta sends those of the label buckets that differ
   * from the coordinator's (labelsToSend), the whole tree every node's.
   */
  readonly labels?: TreeLabels;
}

/** What send puts in one request: the labels already chosen. */
type SendOptions = Omit<PublishTreeOptions, 'labels'> & { readonly labels?: Readonly<Record<string, NodeLabels>> };

export interface PublishOutcome {
  /** The coordinator's answer, with `unchanged` counting every node of the tree that did not change. */
  readonly body: PublishResponse;
  /** Nodes the request named: those that differ from their heads, or the whole tree. */
  readonly sent: number;
  readonly uploaded: number;
}

/**
 * Publishes a tree as its difference from the ledger. The heads are compared bucket by bucket
 * (readDelta) and only the nodes whose sets differ are sent, without prune, pinned with
 * expected_position to the position they were read at: the ledger stamps exactly what the whole tree
 * would have stamped there. When the ledger moves in between (another publish, an enrolment), the
 * heads are read again; after DELTA_ATTEMPTS, when a pruning tree retires nodes, when most of the
 * fleet differs, or when the coordinator has no head buckets, the whole tree is sent as before. An
 * operator's pin stays the pin: a delta read at another position is refused by the coordinator as
 * stale, like the whole tree.
 */
export async function publishTree(client: CoordinatorClient, tree: TreeToPublish, options: PublishTreeOptions): Promise<PublishOutcome> {
  const { labels, ...rest } = options;
  const local = options.full ? null : tree.heads();
  let why = options.full ? '--full' : `the ledger moved under each of ${DELTA_ATTEMPTS} reads of the heads`;
  for (let attempt = 0; local !== null && attempt < DELTA_ATTEMPTS; attempt++) {
    const delta = await readDelta(client, local, options.prune ?? false);
    if (delta.kind === 'full') {
      why = delta.why;
      break;
    }
    if (delta.kind === 'moved') {
      trace(() => 'the ledger moved between the reads of the heads: reading them again');
      continue;
    }
    try {
      const sent = await send(client, tree, delta.send, {
        ...rest,
        ...(labels ? { labels: labelsToSend(labels, delta.labels, local) } : {}),
        prune: false,
        expectPosition: options.expectPosition ?? delta.position,
      });
      return { ...sent, body: { ...sent.body, unchanged: sent.body.unchanged + tree.size - delta.send.length } };
    } catch (e) {
      // The ledger moved after the heads were read: read them again. An operator's pin is final.
      if (options.expectPosition === undefined && e instanceof RetectlError && e.problem?.code === 'stale_position') {
        trace(() => 'the ledger moved before the publish landed: reading the heads again');
        continue;
      }
      throw e;
    }
  }
  trace(() => `sending the whole tree, ${plural(tree.size, 'node')}: ${why}`);
  return send(client, tree, tree.names(), { ...rest, ...(labels ? { labels: labels.all() } : {}) });
}

/** Uploads the blobs of these nodes the coordinator lacks, then publishes them in one request. */
async function send(client: CoordinatorClient, tree: TreeToPublish, nodes: readonly string[], options: SendOptions): Promise<PublishOutcome> {
  const offered = new Set<string>();
  for (const node of nodes) for (const sha of tree.artifacts(node).values()) offered.add(sha);
  const missing = await missingBlobs(client, [...offered].sort(), (sha) => offered.has(sha));
  const bar = options.progress && missing.length >= PROGRESS_THRESHOLD ? progressBar('uploading', missing.length) : { tick() {}, done() {} };
  try {
    await uploadBlobs(client, missing, new Map(missing.map((sha) => [sha, tree.bytes(sha)])), bar);
  } finally {
    bar.done();
  }
  const allow = [...new Set(options.allowIneligible ?? [])];
  const labels = options.labels && Object.keys(options.labels).length > 0 ? { labels: options.labels } : {};
  const answer = await client
    .call('POST', '/v1/publishes', PublishResponse, {
      json: {
        message: options.message,
        nodes: Object.fromEntries(nodes.map((node) => [node, { artifacts: Object.fromEntries(tree.artifacts(node)) }])),
        ...(options.prune ? { prune: true } : {}),
        ...(options.expectPosition !== undefined ? { expected_position: options.expectPosition } : {}),
        ...(allow.length > 0 ? { allow_ineligible: allow } : {}),
        ...(options.rollout ? { rollout: options.rollout } : {}),
        ...(options.supersede ? { supersede_rollout: options.supersede } : {}),
        ...(options.confirmWithin !== undefined ? { confirm_within: options.confirmWithin } : {}),
        ...labels,
      },
    })
    .catch((e: unknown) => {
      // A coordinator that predates token scopes knows no labels: the same request without them.
      if ('labels' in labels && unknownLabels(e)) return null;
      if (e instanceof RetectlError && e.problem?.code === 'rollout_in_progress') {
        throw new RetectlError('conflict', `${e.message}`, { problem: e.problem });
      }
      throw explainIneligible(e, 'publish', (names) => `publish with --allow-ineligible ${names.join(',')}`);
    });
  if (answer === null) {
    note("the coordinator predates token scopes: published without the nodes' tags and groups");
    return send(client, tree, nodes, { ...options, labels: {} });
  }
  return { body: answer.body, sent: nodes.length, uploaded: missing.length };
}

/** The coordinator's refusal of the `labels` key as unknown. */
export function unknownLabels(e: unknown): boolean {
  return refusedKey(e, 'invalid_body', 'labels');
}

/**
 * Uploads the blobs the coordinator lacks, then publishes the compiled tree (as its difference from
 * the ledger: publishTree). With a wait, returns 0 once every touched node applied it, 1 if one
 * failed, 4 if some are still outstanding at the timeout. A publish giving ineligible nodes new
 * content fails unless each is named in allowIneligible.
 */
export async function run(options: PublishOptions): Promise<number> {
  const reading = performance.now();
  const { rete, tree, fromRecord } = loadPublishable(options.dir);
  trace(
    () =>
      `read the rete and its compiled tree (${plural(tree.size, 'node')}) in ${traceMs(performance.now() - reading)} ms: ${fromRecord ? 'taken from the compile record, the YAML being what the last compile read' : 'validated again, the YAML having changed since the last compile or no compile of this build having recorded it'}`,
  );
  const client = new CoordinatorClient(resolveConnection(options, rete.coordinator));
  const chosen = rolloutPlanOf(rete, options);
  refusePruneInWaves(chosen, options.prune ?? false);
  const rollout = chosen?.plan;
  const planLine = rolloutPlanLine(chosen, rete);

  const { body, sent, uploaded } = await publishTree(client, tree, {
    message: options.message ?? 'published with retectl',
    progress: true,
    ...(options.prune ? { prune: true } : {}),
    ...(options.full ? { full: true } : {}),
    ...(options.expectPosition !== undefined ? { expectPosition: options.expectPosition } : {}),
    ...(options.allowIneligible ? { allowIneligible: options.allowIneligible } : {}),
    ...(rollout ? { rollout } : {}),
    ...(options.supersede ? { supersede: options.supersede } : {}),
    ...(options.confirmWithin !== undefined ? { confirmWithin: options.confirmWithin } : {}),
    labels: rete.labels,
  });
  if (options.confirmWithin !== undefined && body.publish_id !== null && !options.json) {
    note(`the changed nodes revert on their own unless confirmed within ${options.confirmWithin} s of taking it: retectl confirm ${body.publish_id}`);
  }
  if (body.rollout) return reportRollout(client, body, sent, uploaded, options, planLine);
  // Set aside or unused (nothing changed), the plan is said where it does not disturb the summary.
  if (planLine && !options.json && body.publish_id !== null) note(planLine);
  for (const n of body.accepted_ineligible ?? []) note(`${ineligibleLine(n.node, n.failed_briefing)}; accepted with --allow-ineligible, as the ledger records`);
  // The publish is said before the wait, so the live counts (stderr) follow it.
  // A changed node the tree does not hold is one this (pruning) publish retires.
  if (!options.json) {
    const lines = formatPublish(body, sent, uploaded, { all: options.all ?? false }, (node) => !tree.has(node));
    const resources = publishResourcesLine(body.changed, (node) => {
      const sha = tree.has(node) ? tree.artifacts(node).get(RESOURCES_JSON) : undefined;
      return sha === undefined ? undefined : parseResources(tree.bytes(sha).toString('utf8'), `${node}'s compiled ${RESOURCES_JSON}`);
    });
    // After the summary line, before the list of nodes.
    if (resources) lines.splice(1, 0, resources);
    for (const line of lines) out(line);
  }
  const waited =
    options.waitSeconds !== undefined && body.publish_id !== null
      ? await waitForPublish(client, body.publish_id, options.waitSeconds, options.json ? undefined : countsReporter())
      : null;
  if (options.json) {
    // --json keeps its shape, every node's row in `status`, which scripts read: asked once, at the end.
    const status = waited ? (await client.call('GET', `/v1/publishes/${encodeURIComponent(body.publish_id!)}`, PublishDetail)).body : null;
    outJson({ ...body, sent, uploaded, ...(waited ? { status, timed_out: waited.timedOut } : {}) });
    return waited?.exit ?? 0;
  }
  if (waited) await printWaited(client, body.publish_id!, waited, options.waitSeconds!, options.all ?? false);
  return waited?.exit ?? 0;
}

/** A publish that started a rollout: its waves, and with --wait the rollout followed until it finishes. */
async function reportRollout(
  client: CoordinatorClient,
  body: PublishResponse,
  sent: number,
  uploaded: number,
  options: PublishOptions,
  planLine: string | undefined,
): Promise<number> {
  const r = body.rollout!;
  if (!options.json) {
    out(
      `rollout ${r.id}: ${body.changed.length + r.waves.slice(1).reduce((a, b) => a + b, 0)} changed nodes in ${plural(r.waves.length, 'wave')} (${r.waves.join(', ')}), ${body.unchanged} unchanged (${plural(sent, 'node')} sent, ${plural(uploaded, 'blob')} uploaded)`,
    );
    if (planLine) out(planLine);
    const first = body.changed.map((c) => c.node);
    const shown = options.all ? first : first.slice(0, LIST_LIMIT);
    out(
      `first wave released at position ${body.position}: ${shown.join(', ') || 'no node (all changed elsewhere since)'}${shown.length < first.length ? ` and ${first.length - shown.length} more (--all to list them)` : ''}`,
    );
    if (options.waitSeconds === undefined) out(`follow it with: retectl rollout status ${r.id.slice(0, 8)} --watch`);
  }
  if (options.waitSeconds === undefined) {
    if (options.json) outJson({ ...body, sent, uploaded });
    return 0;
  }
  return rolloutStatus({ ...options, id: r.id, watch: true, timeoutSeconds: options.waitSeconds });
}

/**
 * After a wait: the nodes that did not reach the publish (all of them with --all), bounded and asked
 * a page at a time, then the counts.
 */
async function printWaited(client: CoordinatorClient, publishId: string, w: WaitResult, seconds: number, all: boolean): Promise<void> {
  const now = new Date();
  const limit = all ? Infinity : LIST_LIMIT;
  const { rows, total } = await publishNodes(client, publishId, all ? 'all' : ['failed', 'reverted', 'outstanding'], limit);
  if (rows.length > 0) {
    out(formatPublishNodes(rows, (since) => formatAge(since, now)));
    if (total > rows.length) out(`… and ${total - rows.length} more; --all to list them`);
  }
  out(formatCounts(w.counts));
  if (w.timedOut) note(`timed out after ${seconds} s with ${w.counts.outstanding} node${w.counts.outstanding === 1 ? '' : 's'} outstanding`);
}

/**
 * Sends the missing blobs as tar archives (POST /v1/blobs), BLOB_REQUESTS_IN_FLIGHT at a time, each
 * entry named by its sha256 and written as the request streams, the bar ticking as entries go out.
 * A coordinator without the archive route gets one PUT per blob, as before.
 */
export async function uploadBlobs(
  client: CoordinatorClient,
  missing: readonly string[],
  bytes: ReadonlyMap<string, Buffer>,
  bar: { tick(): void } = { tick() {} },
): Promise<void> {
  // Entries counted as they went out: an archive refused after some did has counted blobs the PUTs count again.
  let counted = 0;
  const tick = () => {
    counted++;
    bar.tick();
  };
  try {
    await eachInFlight(archiveBatches(missing, bytes), BLOB_REQUESTS_IN_FLIGHT, (batch) =>
      client.call('POST', '/v1/blobs', BlobArchiveResponse, {
        stream: { body: blobArchive(batch, bytes, tick), contentType: 'application/x-tar' },
        timeoutMs: 600_000,
      }),
    );
  } catch (e) {
    if (!(e instanceof RetectlError && e.code === 'not_found')) throw e;
    // Blobs an archive stored before the refusal are PUT again: the store keeps the first and says so.
    // The bar moves on only once the PUTs pass what it counted already, so it never counts past the total.
    let put = 0;
    await putEach(client, missing, bytes, {
      tick() {
        if (++put > counted) bar.tick();
      },
    });
  }
}

/** Consecutive runs of digests, each under ARCHIVE_BLOBS entries and about ARCHIVE_BYTES. */
export function archiveBatches(digests: readonly string[], bytes: ReadonlyMap<string, Uint8Array>): string[][] {
  const batches: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const sha of digests) {
    const n = bytes.get(sha)!.byteLength + 1024;
    if (current.length > 0 && (current.length >= ARCHIVE_BLOBS || size + n > ARCHIVE_BYTES)) {
      batches.push(current);
      current = [];
      size = 0;
    }
    current.push(sha);
    size += n;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

async function putEach(client: CoordinatorClient, missing: readonly string[], bytes: ReadonlyMap<string, Buffer>, bar: { tick(): void }): Promise<void> {
  await eachInFlight(missing, UPLOAD_CONCURRENCY, async (sha) => {
    await client.call('PUT', `/v1/blobs/${sha}`, z.unknown(), { raw: bytes.get(sha)! });
    bar.tick();
  });
}
