import { BlobArchiveResponse, BlobsMissingResponse, MAX_DIGESTS_PER_ASK, PublishResponse } from '#contracts';
import { pack } from 'tar-stream';
import { Readable } from 'node:stream';
import { bytesOf } from '#rete';
import { formatCounts, formatPublishNodes } from '../publish-status.js';
import { formatAge } from '../status.js';
import { z } from 'zod';
import { CoordinatorClient } from '../client.js';
import { RetectlError } from '../errors.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';
import { waitForPublish, type WaitResult } from '../publish-wait.js';
import { progressBar } from '../progress.js';
import { loadCompiledTree } from '../rete-dir.js';
import { digestsOf } from './plan.js';
import { explainIneligible, ineligibleLine } from '../ineligible.js';

export interface PublishOptions extends ConnectionFlags {
  readonly dir: string;
  readonly message?: string;
  readonly prune?: boolean;
  readonly expectPosition?: number;
  readonly json?: boolean;
  /** Seconds to wait for the touched nodes to report; undefined: do not wait. */
  readonly waitSeconds?: number;
  /** Ineligible nodes to give new content anyway; the coordinator records the acceptance. */
  readonly allowIneligible?: readonly string[];
}

const UPLOAD_CONCURRENCY = 8;
/** Below this many uploads a bar would only flicker. */
const PROGRESS_THRESHOLD = 10;
/** Blobs per archive request: a large tree goes in a few requests, each well under the coordinator's limit. */
const ARCHIVE_BLOBS = 20_000;
const ARCHIVE_BYTES = 64 * 1024 * 1024;

/**
 * The digests the coordinator has no blob for, asked in slices of at most MAX_DIGESTS_PER_ASK (a
 * 100,000-node tree of two artifacts each names 200,000). `offered` filters the answer: a digest
 * this tree does not hold was never asked about, so there is nothing to send for it.
 */
export async function missingBlobs(client: CoordinatorClient, digests: readonly string[], offered: (sha: string) => boolean, perAsk = MAX_DIGESTS_PER_ASK): Promise<string[]> {
  const missing: string[] = [];
  for (let i = 0; i < digests.length; i += perAsk) {
    const { body } = await client.call('POST', '/v1/blobs/missing', BlobsMissingResponse, { json: { digests: digests.slice(i, i + perAsk) } });
    for (const sha of body.missing) if (offered(sha)) missing.push(sha);
  }
  return missing;
}

/**
 * Uploads the blobs the coordinator lacks, then publishes the compiled tree in one request. With a
 * wait, returns 0 once every touched node applied it, 1 if one failed, 4 if some are still
 * outstanding at the timeout. A publish giving ineligible nodes new content fails unless each is
 * named in allowIneligible.
 */
export async function run(options: PublishOptions): Promise<number> {
  const { rete, tree } = loadCompiledTree(options.dir);
  const client = new CoordinatorClient(resolveConnection(options, rete.mesh.coordinator));
  const digests = digestsOf(tree);

  const bytes = new Map<string, Buffer>();
  for (const [node, files] of tree) for (const [name, content] of files) bytes.set(digests.get(node)!.get(name)!, bytesOf(content));
  const missing = await missingBlobs(client, [...bytes.keys()].sort(), (sha) => bytes.has(sha));
  const bar = missing.length >= PROGRESS_THRESHOLD ? progressBar('uploading', missing.length) : { tick() {}, done() {} };
  try {
    await uploadBlobs(client, missing, bytes, bar);
  } finally {
    bar.done();
  }

  const nodes = Object.fromEntries([...digests].map(([node, files]) => [node, { artifacts: Object.fromEntries(files) }]));
  const allow = [...new Set(options.allowIneligible ?? [])];
  const { body } = await client
    .call('POST', '/v1/publishes', PublishResponse, {
      json: {
        message: options.message ?? 'published with retectl',
        nodes,
        ...(options.prune ? { prune: true } : {}),
        ...(options.expectPosition !== undefined ? { expected_position: options.expectPosition } : {}),
        ...(allow.length > 0 ? { allow_ineligible: allow } : {}),
      },
    })
    .catch((e: unknown) => {
      throw explainIneligible(e, 'publish', (names) => `publish with --allow-ineligible ${names.join(',')}`);
    });
  for (const n of body.accepted_ineligible ?? []) note(`${ineligibleLine(n.node, n.failed_briefing)}; accepted with --allow-ineligible, as the ledger records`);
  const waited = options.waitSeconds !== undefined && body.publish_id !== null ? await waitForPublish(client, body.publish_id, options.waitSeconds) : null;
  if (options.json) {
    outJson({ ...body, uploaded: missing.length, ...(waited ? { status: waited.detail, timed_out: waited.timedOut } : {}) });
    return waited?.exit ?? 0;
  }
  for (const c of body.changed) out(`${c.node} ${c.from} -> ${c.to}`);
  out(
    body.publish_id === null
      ? `nothing changed: ${body.unchanged} unchanged`
      : `published ${body.publish_id} at position ${body.position}: ${body.changed.length} changed, ${body.unchanged} unchanged (${missing.length} blob${missing.length === 1 ? '' : 's'} uploaded)`,
  );
  if (waited) printWaited(waited, options.waitSeconds!);
  return waited?.exit ?? 0;
}

function printWaited(w: WaitResult, seconds: number): void {
  const now = new Date();
  if (w.detail.nodes.length > 0) out(formatPublishNodes(w.detail.nodes, (since) => formatAge(since, now)));
  out(formatCounts(w.detail.counts));
  if (w.timedOut) note(`timed out after ${seconds} s with ${w.detail.counts.outstanding} node${w.detail.counts.outstanding === 1 ? '' : 's'} outstanding`);
}

/**
 * Sends the missing blobs as tar archives (POST /v1/blobs), each entry named by its sha256 and
 * written as the request streams, the bar ticking as entries go out. A coordinator without the
 * archive route gets one PUT per blob, as before.
 */
async function uploadBlobs(client: CoordinatorClient, missing: readonly string[], bytes: ReadonlyMap<string, Buffer>, bar: { tick(): void }): Promise<void> {
  for (const batch of archiveBatches(missing, bytes)) {
    try {
      await client.call('POST', '/v1/blobs', BlobArchiveResponse, { stream: { body: archiveOf(batch, bytes, bar), contentType: 'application/x-tar' }, timeoutMs: 600_000 });
    } catch (e) {
      if (!(e instanceof RetectlError && e.code === 'not_found')) throw e;
      return putEach(client, missing, bytes, bar);
    }
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

/** A tar archive of these blobs as a stream: the next entry is written once the one before was taken. */
function archiveOf(digests: readonly string[], bytes: ReadonlyMap<string, Buffer>, bar: { tick(): void }): Readable {
  const tar = pack();
  void (async () => {
    for (const sha of digests) {
      const content = bytes.get(sha)!;
      await new Promise<void>((resolve, reject) => tar.entry({ name: sha, size: content.byteLength, mode: 0o644, mtime: new Date(0) }, content, (err) => (err ? reject(err) : resolve())));
      bar.tick();
    }
    tar.finalize();
  })().catch((err: Error) => tar.destroy(err));
  return Readable.from(tar as AsyncIterable<Buffer>);
}

async function putEach(client: CoordinatorClient, missing: readonly string[], bytes: ReadonlyMap<string, Buffer>, bar: { tick(): void }): Promise<void> {
  const queue = [...missing];
  const worker = async () => {
    for (let sha = queue.shift(); sha !== undefined; sha = queue.shift()) {
      await client.call('PUT', `/v1/blobs/${sha}`, z.unknown(), { raw: bytes.get(sha)! });
      bar.tick();
    }
  };
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
}
