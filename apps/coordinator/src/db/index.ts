/** The database: its tables, the connection (with rows copied in by COPY), the change feed between replicas, batching helpers, and backup. */
export { anyOf } from './any-of.js';
export { fetchBackup, localBackup, restoreInto } from './backup-cli.js';
export { registerBackupRoute } from './backup-http.js';
export { BatchFlusher } from './batch-flusher.js';
export { BatchLoader } from './batch-loader.js';
export { type Change, type ChangeFeed, openChangeFeed } from './change-feed.js';
export { copyField, copyInto } from './copy-in.js';
export { type Db, migrateOpened, openDatabase, writeBackStartUp } from './connect.js';
export { migrateToLatest } from './migrate.js';
export { DataDirError } from './data-dir-lock.js';
export type { ApiTokensTable, Database, LedgerTable, PackagesTable, RevocationReason, StoredArtifact } from './database.js';
export { CHANGE_FEED, DB, DbModule } from './db.module.js';
