import { NodeList } from '#contracts';
import { formatAge, formatTable, nodeState } from '#rete';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';

export interface StatusOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** One row per node: head version, applied version, last contact as an age, state. */
export async function run(options: StatusOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', '/v1/nodes', NodeList);
  const now = new Date();
  const rows = body.items.map((n) => ({ ...n, state: nodeState(n), last_contact_age: formatAge(n.last_contact, now) }));
  if (options.json) return outJson({ items: rows });
  if (rows.length === 0) return out('no nodes have been published yet');
  out(
    formatTable(
      ['NODE', 'VERSION', 'APPLIED', 'LAST CONTACT', 'STATE'],
      rows.map((r) => [r.node, r.version === null ? '-' : String(r.version), r.applied_version === null ? '-' : String(r.applied_version), r.last_contact === null ? 'never' : `${r.last_contact_age} ago`, r.state]),
    ),
  );
}
