import { VersionPage } from '#contracts';
import type { z } from 'zod';
import { formatTable } from '../status.js';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';

export interface HistoryOptions extends ConnectionFlags {
  readonly node: string;
  readonly limit: number;
  readonly json?: boolean;
}

/** A node's versions, newest first, following the coordinator's cursor up to the limit. */
export async function run(options: HistoryOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const items: z.infer<typeof VersionPage>['items'] = [];
  let cursor: string | null = null;
  do {
    const page = Math.min(100, options.limit - items.length);
    const query: string = `limit=${page}${cursor ? `&cursor=${cursor}` : ''}`;
    const { body }: { body: z.infer<typeof VersionPage> } = await client.call(
      'GET',
      `/v1/nodes/${encodeURIComponent(options.node)}/versions?${query}`,
      VersionPage,
    );
    items.push(...body.items);
    cursor = body.next_cursor;
  } while (cursor !== null && items.length < options.limit);
  if (options.json) return outJson({ node: options.node, items });
  out(
    formatTable(
      ['VERSION', 'RECORDED', 'ACTOR', 'SET DIGEST', 'MESSAGE'],
      items.map((v) => [String(v.version), v.recorded_at, v.actor, v.set_digest.slice(0, 12), `${v.retired ? '[retired] ' : ''}${v.message}`]),
    ),
  );
}
