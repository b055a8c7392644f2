import { BlobsMissingResponse, PublishResponse } from '#contracts';
import { z } from 'zod';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { progressBar } from '../progress.js';
import { loadCompiledTree } from '../rete-dir.js';
import { digestsOf } from './plan.js';

export interface PublishOptions extends ConnectionFlags {
  readonly dir: string;
  readonly message?: string;
  readonly prune?: boolean;
  readonly expectPosition?: number;
  readonly json?: boolean;
}

const UPLOAD_CONCURRENCY = 8;
/** Below this many uploads a bar would only flicker. */
const PROGRESS_THRESHOLD = 10;

/** Uploads the blobs the coordinator lacks, then publishes the compiled tree in one request. */
export async function run(options: PublishOptions): Promise<void> {
  const { rete, tree } = loadCompiledTree(options.dir);
  const client = new CoordinatorClient(resolveConnection(options, rete.mesh.coordinator));
  const digests = digestsOf(tree);

  const bytes = new Map<string, Buffer>();
  for (const [node, files] of tree) for (const [name, text] of files) bytes.set(digests.get(node)!.get(name)!, Buffer.from(text, 'utf8'));
  const { body: ask } = await client.call('POST', '/v1/blobs/missing', BlobsMissingResponse, { json: { digests: [...bytes.keys()].sort() } });
  const queue = [...ask.missing];
  const bar = queue.length >= PROGRESS_THRESHOLD ? progressBar('uploading', queue.length) : { tick() {}, done() {} };
  const worker = async () => {
    for (let sha = queue.shift(); sha !== undefined; sha = queue.shift()) {
      const raw = bytes.get(sha);
      if (!raw) continue; // the coordinator asked for something we never offered: nothing to send
      await client.call('PUT', `/v1/blobs/${sha}`, z.unknown(), { raw });
      bar.tick();
    }
  };
  try {
    await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
  } finally {
    bar.done();
  }

  const nodes = Object.fromEntries([...digests].map(([node, files]) => [node, { artifacts: Object.fromEntries(files) }]));
  const { body } = await client.call('POST', '/v1/publishes', PublishResponse, {
    json: {
      message: options.message ?? 'published with retectl',
      nodes,
      ...(options.prune ? { prune: true } : {}),
      ...(options.expectPosition !== undefined ? { expected_position: options.expectPosition } : {}),
    },
  });
  if (options.json) return outJson({ ...body, uploaded: ask.missing.length });
  for (const c of body.changed) out(`${c.node} ${c.from} -> ${c.to}`);
  out(
    body.publish_id === null
      ? `nothing changed: ${body.unchanged} unchanged`
      : `published ${body.publish_id} at position ${body.position}: ${body.changed.length} changed, ${body.unchanged} unchanged (${ask.missing.length} blob${ask.missing.length === 1 ? '' : 's'} uploaded)`,
  );
}
