import { sql, type Kysely } from 'kysely';
import type { FleetGauges } from '../core/index.js';
import type { Database } from '../db/index.js';

/** The age buckets of an enrolled node's last contact, newest first; a node falls in the first bucket it is within. */
export const CONTACT_AGE_BUCKETS = [
  { label: '5m', seconds: 300 },
  { label: '1h', seconds: 3_600 },
  { label: '1d', seconds: 86_400 },
  { label: '7d', seconds: 604_800 },
] as const;
/** Older than the last bucket; and enrolled but never polled since. */
export const CONTACT_OLDER = 'older';
export const CONTACT_NEVER = 'never';

/**
 * A node credential holder may report any agent version string; past this many distinct versions the
 * rarest are summed under `other`, so one scrape's series stay bounded whatever agents say.
 */
export const MAX_AGENT_VERSIONS = 50;
export const OTHER_VERSIONS = 'other';

interface Row {
  lifecycle: string;
  convergence: string;
  contact: string | null;
  agent_version: string | null;
  nodes: number | string | bigint;
}

/**
 * One aggregate read over the fleet, classified as fleet-state.ts classifies a single node (lifecycle
 * and convergence), grouped in the database: the answer has a row per combination of states, never
 * one per node. Nodes are those a fleet listing shows: a head, a status, a credential or a live
 * enrolment token.
 */
export async function readFleetGauges(db: Kysely<Database>, now: Date): Promise<FleetGauges> {
  const since = (seconds: number) => new Date(now.getTime() - seconds * 1000);
  const contactCase = sql.join(
    CONTACT_AGE_BUCKETS.map((b) => sql`when last_contact >= ${since(b.seconds)} then ${b.label}`),
    sql` `,
  );
  const { rows } = await sql<Row>`
    with names as (
      select node from node_heads
      union select node from node_status
      union select node from node_credentials
      union select node from enrolment_tokens where used_at is null and expires_at > ${now}
    ), classified as (
      select
        case when h.retired then 'retired'
             when exists (select 1 from node_credentials c where c.node = n.node) then 'enrolled'
             else 'unmanaged' end as lifecycle,
        case when h.node is null then 'unpublished'
             when o.result = 'applied' then 'converged'
             when o.result = 'rejected' and s.applied_version = h.version then 'failed'
             when s.applied_version >= h.version then 'converged'
             when o.node is not null then 'failed'
             else 'outstanding' end as convergence,
        s.last_contact,
        s.agent_version
      from names n
      left join node_heads h on h.node = n.node
      left join node_status s on s.node = n.node
      left join node_outcomes o on o.node = h.node and o.version = h.version
    )
    select
      lifecycle,
      convergence,
      case when lifecycle <> 'enrolled' then null
           when last_contact is null then ${CONTACT_NEVER}
           ${contactCase}
           else ${CONTACT_OLDER} end as contact,
      case when lifecycle = 'enrolled' then coalesce(agent_version, 'unknown') end as agent_version,
      count(*) as nodes
    from classified
    group by 1, 2, 3, 4`.execute(db);
  return summarise(rows.map((r) => ({ ...r, nodes: Number(r.nodes) })));
}

/** The grouped rows summed per gauge; every contact bucket is present (0 when empty), so an alert's ratio always has its terms. */
export function summarise(rows: readonly (Omit<Row, 'nodes'> & { nodes: number })[]): FleetGauges {
  const nodes = new Map<string, { lifecycle: string; convergence: string; count: number }>();
  const contact = new Map<string, number>([...CONTACT_AGE_BUCKETS.map((b) => b.label), CONTACT_OLDER, CONTACT_NEVER].map((l) => [l, 0]));
  const versions = new Map<string, number>();
  for (const r of rows) {
    const key = `${r.lifecycle}\0${r.convergence}`;
    const n = nodes.get(key) ?? { lifecycle: r.lifecycle, convergence: r.convergence, count: 0 };
    n.count += r.nodes;
    nodes.set(key, n);
    if (r.contact !== null) contact.set(r.contact, (contact.get(r.contact) ?? 0) + r.nodes);
    if (r.agent_version !== null) versions.set(r.agent_version, (versions.get(r.agent_version) ?? 0) + r.nodes);
  }
  return {
    nodes: [...nodes.values()],
    contactAge: [...contact].map(([age, count]) => ({ age, count })),
    agentVersions: capVersions(versions),
  };
}

/** The most common MAX_AGENT_VERSIONS - 1 versions by name, the rest as one `other` series. */
function capVersions(versions: Map<string, number>): { version: string; count: number }[] {
  const all = [...versions].map(([version, count]) => ({ version, count }));
  if (all.length <= MAX_AGENT_VERSIONS) return all;
  all.sort((a, b) => b.count - a.count || a.version.localeCompare(b.version));
  const kept = all.slice(0, MAX_AGENT_VERSIONS - 1);
  const rest = all.slice(MAX_AGENT_VERSIONS - 1).reduce((sum, v) => sum + v.count, 0);
  return [...kept, { version: OTHER_VERSIONS, count: rest }];
}
