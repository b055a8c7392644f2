import { DiffResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';

export interface DiffOptions extends ConnectionFlags {
  readonly node: string;
  readonly from: number;
  readonly to: number;
  readonly json?: boolean;
}

/** The coordinator's unified diff between two versions of a node (from 0 = everything added). */
export async function run(options: DiffOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', `/v1/nodes/${encodeURIComponent(options.node)}/diff?from=${options.from}&to=${options.to}`, DiffResponse);
  if (options.json) return outJson(body);
  if (body.changed.length === 0) return out(`${body.node}: versions ${body.from} and ${body.to} hold the same artifacts`);
  for (const c of body.changed) out(c.diff);
}
