import { PublishResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';

export interface RetireOptions extends ConnectionFlags {
  readonly node: string;
  readonly message?: string;
  readonly json?: boolean;
}

/** Stamps the node's final, empty version; its agent stops and its credential is revoked once applied. */
export async function run(options: RetireOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', `/v1/nodes/${encodeURIComponent(options.node)}/retire`, PublishResponse, {
    json: options.message ? { message: options.message } : {},
  });
  if (options.json) return outJson(body);
  for (const c of body.changed) out(`${c.node} ${c.from} -> ${c.to} (retired)`);
}
