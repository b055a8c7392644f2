import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { type LedgerProjection, type PublishRecorded, type StoredEvent, type StoredOf, bundleEtag } from '../ledger/index.js';
import { projectRollouts } from './rollouts.projection.js';

const CHUNK = 1000;

/**
 * Applies appended events to the read models inside the appending transaction, or during a rebuild:
 * a read model never shows what the ledger does not hold. Events of one publish must arrive together: a node version row takes its message from
 * the publish record that closes the group.
 */
export async function project(trx: Transaction<Database>, events: readonly StoredEvent[]): Promise<void> {
  await projectPackages(trx, events);
  await projectRollouts(trx, events);
  const records = new Map<string, PublishRecorded['data']>();
  for (const e of events) if (e.type === 'publish_recorded') records.set(e.data.publish_id, e.data);
  const stamps = events.filter((e): e is StoredOf<'node_set_stamped'> => e.type === 'node_set_stamped');
  if (stamps.length === 0 && records.size === 0 && !events.some((e) => e.type === 'publish_confirmed')) return;

  const heads = [];
  const versions = [];
  for (const e of stamps) {
    const d = e.data;
    const record = records.get(d.publish_id);
    const common = {
      node: d.node,
      version: d.version,
      set_digest: d.set_digest,
      retired: d.retired,
      artifacts: JSON.stringify(d.artifacts),
      publish_id: d.publish_id,
      position: e.position,
    };
    // Nothing is signed here: the key the event names signs the bundle when its node fetches it (PollRoute).
    const kid = String(e.meta.kid);
    heads.push({
      ...common,
      kid,
      etag: bundleEtag(kid, e.hash),
      updated_at: e.recorded_at,
      confirm_within: record?.confirm_within ?? null,
      confirmed_by: null,
    });
    versions.push({ ...common, actor: String(e.meta.actor), message: record?.message ?? '', recorded_at: e.recorded_at });
  }
  for (let i = 0; i < heads.length; i += CHUNK) {
    await trx
      .insertInto('node_heads')
      .values(heads.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.column('node').doUpdateSet({
          version: sql`excluded.version`,
          set_digest: sql`excluded.set_digest`,
          retired: sql`excluded.retired`,
          artifacts: sql`excluded.artifacts`,
          kid: sql`excluded.kid`,
          etag: sql`excluded.etag`,
          position: sql`excluded.position`,
          publish_id: sql`excluded.publish_id`,
          updated_at: sql`excluded.updated_at`,
          confirm_within: sql`excluded.confirm_within`,
          confirmed_by: sql`excluded.confirmed_by`,
        }),
      )
      .execute();
    await trx
      .insertInto('node_versions')
      .values(versions.slice(i, i + CHUNK))
      .execute();
  }
  for (const e of events) {
    if (e.type === 'publish_confirmed') {
      await projectConfirmation(trx, e);
      continue;
    }
    if (e.type !== 'publish_recorded') continue;
    const d = e.data;
    await trx
      .insertInto('publishes')
      .values({
        publish_id: d.publish_id,
        position: e.position,
        kind: d.kind,
        actor: String(e.meta.actor),
        message: d.message,
        changed: JSON.stringify(d.changed),
        unchanged: d.unchanged,
        recorded_at: e.recorded_at,
        accepted_ineligible: d.accepted_ineligible ? JSON.stringify(d.accepted_ineligible) : null,
      })
      .execute();
  }
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
  project(trx: Transaction<Database>, events: readonly StoredEvent[]): Promise<void> {
    return project(trx, events);
  }
}

/**
 * An operator's confirmation reaches the heads still at the publish's versions (a node published
 * over since is not confirmed by it): who confirmed, and a new ETag, so that every agent's next poll,
 * and every watch held, gets a 200 whose `florete-confirm` header says so. The bundle's bytes are the
 * same; the agent takes the same version again as up to date.
 */
async function projectConfirmation(trx: Transaction<Database>, e: StoredOf<'publish_confirmed'>): Promise<void> {
  const rows = await trx.selectFrom('node_heads').select(['node', 'kid']).where('publish_id', '=', String(e.data.publish_id)).execute();
  for (let i = 0; i < rows.length; i += CHUNK) {
    const moved = rows.slice(i, i + CHUNK).map((r) => sql`(${r.node}, ${bundleEtag(r.kid, e.hash)})`);
    await sql`UPDATE node_heads SET confirmed_by = ${String(e.meta.actor)}, etag = v.etag FROM (VALUES ${sql.join(moved)}) AS v(node, etag) WHERE node_heads.node = v.node`.execute(
      trx,
    );
  }
}
