import { NodeList, PublishDetail } from '#contracts';
import { formatAge, formatCounts, formatPublishNodes, formatTable, nodeState } from '#rete';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { ineligibleLine } from '../ineligible.js';

export interface StatusOptions extends ConnectionFlags {
  readonly json?: boolean;
  /** Per node of this publish: applied, outstanding, failed (with the reason) or superseded. */
  readonly publish?: string;
  /** Only nodes in this lifecycle state or convergence. */
  readonly state?: string;
}

/** One row per node: head and applied versions, last contact as an age, lifecycle state and convergence. */
export async function run(options: StatusOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  if (options.publish !== undefined) return publishStatus(client, options.publish, options.json);
  const query = options.state ? `?state=${encodeURIComponent(options.state)}` : '';
  const { body } = await client.call('GET', `/v1/nodes${query}`, NodeList);
  const now = new Date();
  if (options.json) return outJson({ items: body.items.map((n) => ({ ...n, last_contact_age: formatAge(n.last_contact, now) })) });
  if (body.items.length === 0) return out(options.state ? `no nodes are ${options.state}` : 'no nodes have been published yet');
  out(
    formatTable(
      ['NODE', 'VERSION', 'APPLIED', 'LAST CONTACT', 'STATE'],
      body.items.map((r) => [
        r.node,
        r.version === null ? '-' : String(r.version),
        r.applied_version === null ? '-' : String(r.applied_version),
        r.last_contact === null ? 'never' : `${formatAge(r.last_contact, now)} ago`,
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
