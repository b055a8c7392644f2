import { PublishResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';
import { explainIneligible, ineligibleLine } from '../ineligible.js';

export interface RollbackOptions extends ConnectionFlags {
  readonly node: string;
  readonly to: number;
  readonly message?: string;
  readonly json?: boolean;
  /** Roll back even if the node is ineligible; the coordinator records the acceptance. */
  readonly allowIneligible?: boolean;
}

/** Stamps a new version carrying an older version's content (old versions are never served again). */
export async function run(options: RollbackOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client
    .call('POST', `/v1/nodes/${encodeURIComponent(options.node)}/rollback`, PublishResponse, {
      json: {
        to_version: options.to,
        message: options.message ?? `roll ${options.node} back to version ${options.to}`,
        ...(options.allowIneligible ? { allow_ineligible: [options.node] } : {}),
      },
    })
    .catch((e: unknown) => {
      throw explainIneligible(e, 'rollback', () => 'roll back with --allow-ineligible');
    });
  for (const n of body.accepted_ineligible ?? []) note(`${ineligibleLine(n.node, n.failed_briefing)}; accepted with --allow-ineligible, as the ledger records`);
  if (options.json) return outJson(body);
  if (body.changed.length === 0) return out(`${options.node} already holds the content of version ${options.to}: nothing changed`);
  for (const c of body.changed) out(`${c.node} ${c.from} -> ${c.to} (content of version ${options.to})`);
}
