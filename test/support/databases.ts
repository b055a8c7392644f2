import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, openMemoryDatabase, type Db } from '../../apps/coordinator/src/db/connect.js';
import { migrateToLatest } from '../../apps/coordinator/src/db/migrate.js';

export interface TestDatabase {
  readonly name: 'pglite' | 'postgres';
  /** A fresh, migrated database of its own: tests never share state. */
  open(): Promise<Db & { url?: string }>;
}

const serverUrl = process.env.FLORETE_TEST_DATABASE_URL || undefined;

/** A new empty database on the test PostgreSQL server; returns its URL. */
export async function createPostgresDatabase(): Promise<string> {
  if (!serverUrl) throw new Error('FLORETE_TEST_DATABASE_URL is not set');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

// initdb plus migrations cost seconds per PGlite instance; each test file migrates once and clones the dump.
let template: Promise<File | Blob> | undefined;
async function migratedTemplate(): Promise<File | Blob> {
  const db = await openMemoryDatabase();
  await migrateToLatest(db.kysely);
  const dump = await db.pglite!.dumpDataDir('none');
  await db.close();
  return dump;
}

const pglite: TestDatabase = {
  name: 'pglite',
  async open() {
    template ??= migratedTemplate();
    return openMemoryDatabase(await template);
  },
};

const postgres: TestDatabase = {
  name: 'postgres',
  async open() {
    const url = await createPostgresDatabase();
    const db = await openDatabase({ databaseUrl: url, dataDir: '/nonexistent' });
    await migrateToLatest(db.kysely);
    return Object.assign(db, { url });
  },
};

/** Every database the suite runs on: PGlite always, PostgreSQL when scripts/test.mjs started one. */
export const testDatabases: TestDatabase[] = serverUrl ? [postgres, pglite] : [pglite];
export const hasPostgres = Boolean(serverUrl);
