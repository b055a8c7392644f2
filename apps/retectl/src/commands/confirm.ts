import { ConfirmResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson, plural } from '../output.js';

export interface ConfirmOptions extends ConnectionFlags {
  readonly publish: string;
  readonly json?: boolean;
}

/** Confirms a publish made with --confirm-within: its nodes keep it instead of reverting; the ledger records who. */
export async function run(options: ConfirmOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', `/v1/publishes/${encodeURIComponent(options.publish)}/confirm`, ConfirmResponse, { json: {} });
  if (options.json) return outJson(body);
  out(`confirmed ${body.publish_id} as ${body.confirmed_by} at position ${body.position}: ${plural(body.nodes, 'node')} keep it`);
}
