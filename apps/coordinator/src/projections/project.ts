import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { type LedgerEvent, type LedgerProjection, type PublishRecorded, type StoredEvent, type StoredOf, bundleEtag, headsAtPublish } from '../ledger/index.js';
import { projectRollouts } from './rollouts.projection.js';

const CHUNK = 1000;
/** Stamps per statement: their rows are one parameter, so only its size in memory bounds a statement. */
const STAMPS_CHUNK = 10_000;

/**
 * Applies appended events to the read models inside the appending transaction, or during a rebuild:
 * a read model never shows what the ledger does not hold. Events of one publish must arrive together: a node version row takes its message from
 * the publish record that closes the group.
 */
export async function project(trx: Transaction<Database>, events: readonly StoredEvent[], stampsProjected = false): Promise<void> {
  await projectPackages(trx, events);
  await projectRollouts(trx, events);
  const records = recordsOf(events);
  const stamps = stampsProjected ? [] : stampsOf(events);
  if (stamps.length === 0 && records.size === 0 && !events.some((e) => e.type === 'publish_confirmed')) return;

  for (let i = 0; i < stamps.length; i += STAMPS_CHUNK) await projectStamps(trx, stamps.slice(i, i + STAMPS_CHUNK), records);
  for (const e of events) {
    if (e.type === 'publish_confirmed') await projectConfirmation(trx, e);
    else if (e.type === 'publish_recorded') await projectPublishRecord(trx, e);
  }
}

/**
 * A publish's row, read from its record's ledger row the same transaction wrote, as the stamps are
 * (projectStamps): the record's list of changed nodes has one entry per node, and sent again as a
 * parameter it was parsed a second time (a 100,000-node publish's list took 200-290 ms to bind;
 * bench/README.md, bench:publish).
 */
async function projectPublishRecord(trx: Transaction<Database>, e: StoredOf<'publish_recorded'>): Promise<void> {
  const result = await sql`INSERT INTO publishes (publish_id, position, kind, actor, message, changed, unchanged, recorded_at, accepted_ineligible)
    SELECT l.data->>'publish_id', l.position, l.data->>'kind', l.meta->>'actor', l.data->>'message', l.data->'changed',
      (l.data->>'unchanged')::integer, l.recorded_at, nullif(l.data->'accepted_ineligible', 'null'::jsonb)
    FROM ledger l WHERE l.position = ${e.position} AND l.type = 'publish_recorded' AND l.data->>'publish_id' = ${e.data.publish_id}`.execute(trx);
  if (Number(result.numAffectedRows ?? -1) !== 1)
    throw new Error(`projecting publish ${e.data.publish_id} found no record of it at ledger position ${e.position}`);
}

/**
 * The stamps among `run`, a run of appended events, ahead of the rest of its append (`project` with
 * `stampsProjected`): each publish's confirmation window comes from its record among
 * `decided`, every event of the append.
 */
export async function projectStampRun(trx: Transaction<Database>, run: readonly StoredEvent[], decided: readonly LedgerEvent[]): Promise<void> {
  const stamps = stampsOf(run);
  if (stamps.length === 0) return;
  let records = recordsOfAppend.get(decided);
  if (!records) recordsOfAppend.set(decided, (records = recordsOf(decided)));
  for (let i = 0; i < stamps.length; i += STAMPS_CHUNK) await projectStamps(trx, stamps.slice(i, i + STAMPS_CHUNK), records);
}

/** Each append's publish records, collected on its first run rather than once per run (an append of 100,000 stamps has ten). */
const recordsOfAppend = new WeakMap<readonly LedgerEvent[], Map<string, PublishRecorded['data']>>();

function recordsOf(events: readonly (StoredEvent | LedgerEvent)[]): Map<string, PublishRecorded['data']> {
  const records = new Map<string, PublishRecorded['data']>();
  for (const e of events) if (e.type === 'publish_recorded') records.set(e.data.publish_id, e.data);
  return records;
}

const stampsOf = (events: readonly StoredEvent[]): StoredOf<'node_set_stamped'>[] =>
  events.filter((e): e is StoredOf<'node_set_stamped'> => e.type === 'node_set_stamped');

/**
 * Each stamp's node's head, in one statement that reads the stamps from the ledger rows the same
 * transaction wrote: PostgreSQL already holds each event's data as jsonb, so nothing is serialised,
 * sent or parsed a second time (a large publish's stamps sent again as a JSON document were a large
 * part of what PostgreSQL did for it; bench/README.md, bench:publish). Only each publish's
 * confirmation window travels, from the record that closes its group. A node's versions are its
 * stamps in the ledger itself (ledger/store/versions.ts): nothing else is written for them. The
 * stamps are a run of the ledger (both callers pass contiguous events), so the rows of that type
 * between the first and the last position are exactly these; a count that differs aborts the
 * transaction rather than project something else.
 */
async function projectStamps(
  trx: Transaction<Database>,
  stamps: readonly StoredOf<'node_set_stamped'>[],
  records: ReadonlyMap<string, PublishRecorded['data']>,
): Promise<void> {
  const from = stamps[0].position;
  const to = stamps[stamps.length - 1].position;
  const publishes = [...new Set(stamps.map((e) => e.data.publish_id))].map((id) => {
    const record = records.get(id);
    return { publish_id: id, confirm_within: record?.confirm_within ?? null };
  });
  // Nothing is signed here: the key the event names signs the bundle when its node fetches it (PollRoute).
  // The ETag is bundleEtag(kid, hash): the first 40 hex digits of sha256("<kid>:<event hash>"), quoted.
  const result = await sql`WITH p AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(publishes)}::jsonb) AS p(publish_id text, confirm_within integer)
    ), s AS (
      SELECT l.data->>'node' AS node, (l.data->>'version')::integer AS version, l.data->>'set_digest' AS set_digest,
        (l.data->>'retired')::boolean AS retired, l.data->'artifacts' AS artifacts, l.data->>'publish_id' AS publish_id,
        l.position, l.recorded_at, l.meta->>'kid' AS kid,
        '"' || left(encode(sha256(convert_to((l.meta->>'kid') || ':' || l.hash, 'UTF8')), 'hex'), 40) || '"' AS etag,
        p.confirm_within
      FROM ledger l LEFT JOIN p ON p.publish_id = l.data->>'publish_id'
      WHERE l.position BETWEEN ${from} AND ${to} AND l.type = 'node_set_stamped'
    )
    INSERT INTO node_heads (node, version, set_digest, retired, artifacts, publish_id, position, kid, etag, updated_at, confirm_within, confirmed_by)
    SELECT node, version, set_digest, retired, artifacts, publish_id, position, kid, etag, recorded_at, confirm_within, NULL FROM s
    ON CONFLICT (node) DO UPDATE SET
      version = excluded.version,
      set_digest = excluded.set_digest,
      retired = excluded.retired,
      artifacts = excluded.artifacts,
      kid = excluded.kid,
      etag = excluded.etag,
      position = excluded.position,
      publish_id = excluded.publish_id,
      updated_at = excluded.updated_at,
      confirm_within = excluded.confirm_within,
      confirmed_by = excluded.confirmed_by`.execute(trx);
  const projected = Number(result.numAffectedRows ?? -1);
  if (projected !== stamps.length)
    throw new Error(`projecting ${stamps.length} stamps at ledger positions ${from}-${to} found ${projected}: the stamps given are not a run of the ledger`);
}

/** The repository's packages: the ledger event carries everything the Packages index needs. */
async function projectPackages(trx: Transaction<Database>, events: readonly StoredEvent[]): Promise<void> {
  const rows = events
    .filter((e): e is StoredOf<'package_pushed'> => e.type === 'package_pushed')
    .map((e) => {
      const d = e.data;
      return {
        name: d.name,
        version: d.version,
        architecture: d.architecture,
        sha256: d.sha256,
        size: d.size,
        control: d.control,
        actor: String(e.meta.actor),
        position: e.position,
        recorded_at: e.recorded_at,
      };
    });
  if (rows.length > 0) await trx.insertInto('packages').values(rows).execute();
}

/** The read models as the ledger writer sees them: registered with it by the projections module. */
export class ReadModelProjection implements LedgerProjection {
  project(trx: Transaction<Database>, events: readonly StoredEvent[], stampsProjected?: boolean): Promise<void> {
    return project(trx, events, stampsProjected);
  }

  projectStamps(trx: Transaction<Database>, run: readonly StoredEvent[], decided: readonly LedgerEvent[]): Promise<void> {
    return projectStampRun(trx, run, decided);
  }
}

/**
 * An operator's confirmation reaches the heads still at the publish's versions (a node published
 * over since is not confirmed by it): who confirmed, and a new ETag, so that every agent's next poll,
 * and every watch held, gets a 200 whose `florete-confirm` header says so. The bundle's bytes are the
 * same; the agent takes the same version again as up to date.
 */
async function projectConfirmation(trx: Transaction<Database>, e: StoredOf<'publish_confirmed'>): Promise<void> {
  const rows = await headsAtPublish(trx, String(e.data.publish_id));
  for (let i = 0; i < rows.length; i += CHUNK) {
    const moved = rows.slice(i, i + CHUNK).map((r) => sql`(${r.node}, ${bundleEtag(r.kid, e.hash)})`);
    await sql`UPDATE node_heads SET confirmed_by = ${String(e.meta.actor)}, etag = v.etag FROM (VALUES ${sql.join(moved)}) AS v(node, etag) WHERE node_heads.node = v.node`.execute(
      trx,
    );
  }
}
