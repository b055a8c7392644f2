import { NodeList, PublishDetail } from '#contracts';
import { formatAge, formatCounts, formatPublishNodes, formatSeconds, formatTable, nodeState, statusFilter } from '#rete';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { usageError } from '../errors.js';
import { note, out, outJson } from '../output.js';
import { ineligibleLine } from '../ineligible.js';

export interface StatusOptions extends ConnectionFlags {
  readonly json?: boolean;
  /** Per node of this publish: applied, outstanding, failed (with the reason) or superseded. */
  readonly publish?: string;
  /** Only nodes in this lifecycle state or convergence. */
  readonly state?: string;
  /** Only nodes whose credential is in this state. */
  readonly credential?: string;
  /** Only nodes whose last contact is older than this many seconds, or never. */
  readonly contactOlderThan?: number;
}

/** One row per node: head and applied versions, credential, last contact as an age, lifecycle state and convergence. */
export async function run(options: StatusOptions): Promise<void> {
  const filter = statusFilter({ state: options.state, credential: options.credential, contactOlderThanSeconds: options.contactOlderThan });
  if (!filter.ok) throw usageError(filter.error);
  const client = new CoordinatorClient(resolveConnection(options));
  if (options.publish !== undefined) return publishStatus(client, options.publish, options.json);
  for (const n of filter.notes) note(`warning: ${n}`);
  const { body } = await client.call('GET', `/v1/nodes${filter.query}`, NodeList);
  // Ages are the coordinator's (last_contact_age_seconds), the clock its filter used: this machine's may be off.
  const age = (seconds: number | null) => (seconds === null ? 'never' : formatSeconds(seconds));
  if (options.json) return outJson({ items: body.items.map((n) => ({ ...n, last_contact_age: age(n.last_contact_age_seconds) })) });
  if (body.items.length === 0) return out(filter.query ? 'no nodes match' : 'no nodes have been published yet');
  out(
    formatTable(
      ['NODE', 'VERSION', 'APPLIED', 'CREDENTIAL', 'LAST CONTACT', 'STATE'],
      body.items.map((r) => [
        r.node,
        r.version === null ? '-' : String(r.version),
        r.applied_version === null ? '-' : String(r.applied_version),
        r.credential,
        r.last_contact_age_seconds === null ? 'never' : `${age(r.last_contact_age_seconds)} ago`,
        nodeState(r),
      ]),
    ),
  );
}

async function publishStatus(client: CoordinatorClient, id: string, json?: boolean): Promise<void> {
  const { body } = await client.call('GET', `/v1/publishes/${encodeURIComponent(id)}`, PublishDetail);
  if (json) return outJson(body);
  const now = new Date();
  out(`${body.kind} ${body.publish_id} at position ${body.position} by ${body.actor}, ${body.recorded_at}: ${body.message}`);
  if (body.nodes.length > 0) out(formatPublishNodes(body.nodes, (since) => formatAge(since, now)));
  out(formatCounts(body.counts));
  for (const n of body.accepted_ineligible) out(`${ineligibleLine(n.node, n.failed_briefing)}; accepted by ${body.actor}`);
}
