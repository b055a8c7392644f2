import { NodeDetail, PublishDetail, type ReportResource } from '#contracts';
import { formatCounts, formatPublishNodes } from '../publish-status.js';
import { formatAge, formatSeconds, formatTable, nodeState } from '../status.js';
import { statusFilter } from '../status-filter.js';
import { CoordinatorClient } from '../client.js';
import { listNodes } from '../node-pages.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { usageError } from '../errors.js';
import { note, out, outJson } from '../output.js';
import { ineligibleLine } from '../ineligible.js';

export interface StatusOptions extends ConnectionFlags {
  readonly json?: boolean;
  /** One node in detail, with what its agent last did to its host resources. */
  readonly node?: string;
  /** Per node of this publish: applied, outstanding, failed (with the reason) or superseded. */
  readonly publish?: string;
  /** Only nodes in this lifecycle state or convergence. */
  readonly state?: string;
  /** Only nodes whose credential is in this state. */
  readonly credential?: string;
  /** Only nodes whose last contact is older than this many seconds, or never. */
  readonly contactOlderThan?: number;
}

/** One row per node: head and applied versions, the agent version it runs, credential, last contact as an age, lifecycle state and convergence. */
export async function run(options: StatusOptions): Promise<void> {
  const filter = statusFilter({ state: options.state, credential: options.credential, contactOlderThanSeconds: options.contactOlderThan });
  if (!filter.ok) throw usageError(filter.error);
  const client = new CoordinatorClient(resolveConnection(options));
  if (options.node !== undefined) {
    if (options.publish !== undefined || filter.query)
      throw usageError('a node name shows that node alone: leave out --publish, --state, --credential and --contact-older-than');
    return nodeStatus(client, options.node, options.json);
  }
  if (options.publish !== undefined) return publishStatus(client, options.publish, options.json);
  for (const n of filter.notes) note(`warning: ${n}`);
  const body = { items: await listNodes(client, filter.query) };
  // Ages are the coordinator's (last_contact_age_seconds), the clock its filter used: this machine's may be off.
  const age = (seconds: number | null) => (seconds === null ? 'never' : formatSeconds(seconds));
  if (options.json) return outJson({ items: body.items.map((n) => ({ ...n, last_contact_age: age(n.last_contact_age_seconds) })) });
  if (body.items.length === 0) return out(filter.query ? 'no nodes match' : 'no nodes have been published yet');
  out(
    formatTable(
      ['NODE', 'VERSION', 'APPLIED', 'AGENT', 'CREDENTIAL', 'LAST CONTACT', 'STATE'],
      body.items.map((r) => [
        r.node,
        r.version === null ? '-' : String(r.version),
        r.applied_version === null ? '-' : String(r.applied_version),
        r.agent_version ?? '-',
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

/** One node: its row of the listing as lines, then its host resources as the agent last reported them. */
async function nodeStatus(client: CoordinatorClient, node: string, json?: boolean): Promise<void> {
  const { body: n } = await client.call('GET', `/v1/nodes/${encodeURIComponent(node)}`, NodeDetail);
  if (json) return outJson(n);
  const lines: [string, string][] = [
    ['node', n.node],
    ['version', n.version === null ? '-' : String(n.version)],
    ['applied', n.applied_version === null ? '-' : String(n.applied_version)],
    ['agent', n.agent_version ?? '-'],
    ['state', nodeState(n)],
    ['credential', n.credential],
    ['last contact', n.last_contact_age_seconds === null ? 'never' : `${formatSeconds(n.last_contact_age_seconds)} ago`],
    ['last result', n.last_result === null ? '-' : `${n.last_result}${n.last_error ? `: ${n.last_error.split('\n')[0]}` : ''}`],
  ];
  if (n.resources) lines.push(['resources', `version ${n.resources.version}, ${n.resources.result}, reported ${n.resources.reported_at}`]);
  else lines.push(['resources', 'none reported']);
  out(lines.map(([k, v]) => `${k.padEnd(13)}${v}`).join('\n'));
  if (n.resources && n.resources.items.length > 0) out(formatResources(n.resources.items));
}

/** One row per resource: kind, what (path, or name=version), outcome, and the detail (the version before, the error's last line). */
export function formatResources(items: readonly ReportResource[]): string {
  const rows = items.map((r) => {
    const error = r.error ? r.error.trim().split('\n').pop()! : '';
    if (r.kind === 'file') return ['file', r.path, r.outcome, error];
    const what = r.version === null ? r.name : `${r.name}=${r.version}`;
    const detail =
      error ||
      (r.outcome === 'applied' ? (r.was ? `was ${r.was}` : 'newly installed') : r.outcome === 'forgotten' ? 'installed before the agent: left installed' : '');
    return ['package', what, r.outcome, detail];
  });
  return formatTable(['KIND', 'RESOURCE', 'OUTCOME', 'DETAIL'], rows);
}
