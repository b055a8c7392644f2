import type { Kysely, Selectable } from 'kysely';
import type { Database, PackagesTable } from '../db/index.js';
import type { RecordedPackages } from '../ledger/index.js';

export interface PackageRow {
  readonly name: string;
  readonly version: string;
  readonly architecture: string;
  readonly sha256: string;
  readonly size: number;
  readonly control: string;
  readonly actor: string;
  readonly position: number;
  readonly recorded_at: string;
}

const toRow = (r: Selectable<PackagesTable>): PackageRow => ({
  name: r.name,
  version: r.version,
  architecture: r.architecture,
  sha256: r.sha256,
  size: r.size,
  control: r.control,
  actor: r.actor,
  position: Number(r.position),
  recorded_at: new Date(r.recorded_at).toISOString(),
});

export async function findPackage(db: Kysely<Database>, name: string, version: string, architecture: string): Promise<PackageRow | undefined> {
  const row = await db
    .selectFrom('packages')
    .selectAll()
    .where('name', '=', name)
    .where('version', '=', version)
    .where('architecture', '=', architecture)
    .executeTakeFirst();
  return row && toRow(row);
}

/** Every package, in the order they were pushed: the order of the Packages index. */
export async function listPackages(db: Kysely<Database>): Promise<PackageRow[]> {
  return (await db.selectFrom('packages').selectAll().orderBy('position').execute()).map(toRow);
}

/** Whether a blob is a package's file: only those are served to anyone without a credential. */
export async function isPackageBlob(db: Kysely<Database>, sha256: string): Promise<boolean> {
  return (await db.selectFrom('packages').select('sha256').where('sha256', '=', sha256).limit(1).executeTakeFirst()) !== undefined;
}

/** The ledger position of the last push, 0 for none: the repository's indices change only when it does. */
export async function lastPushPosition(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('packages')
    .select((eb) => eb.fn.max('position').as('position'))
    .executeTakeFirst();
  return row?.position == null ? 0 : Number(row.position);
}

/** The ledger's RECORDED_PACKAGES port: a push is decided against what is recorded. */
export const recordedPackages: RecordedPackages = { find: findPackage };
