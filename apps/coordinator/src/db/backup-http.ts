import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DomainError, sendProblem, toProblem, roleAllows, type Authenticator } from '../common/index.js';
import { BackupError, backupTar, takeBackup } from './backup.js';
import type { Db } from './connect.js';

/**
 * POST /v1/admin/backup: a consistent backup of the embedded database and the key files, as one tar
 * (application/x-tar), taken by the running coordinator, the one process that may open its data dir.
 * Admins only: the backup holds the signing keys. A POST, so no cache or prefetch ever takes one.
 */
export const BACKUP_PATH = '/v1/admin/backup';

export function registerBackupRoute(
  fastify: FastifyInstance,
  db: Db,
  files: { signingKeysFile: string; repoKeyFile: string },
  auth: Authenticator,
  log: Logger,
): void {
  fastify.post(BACKUP_PATH, async (req, reply) => {
    try {
      const principal = await auth.authenticate(req.headers.authorization);
      if (principal.kind !== 'api' || !roleAllows(principal.role, 'admin'))
        throw new DomainError('forbidden', 'a backup holds the signing keys: it is for API tokens with the admin role');
      let parts;
      try {
        parts = await takeBackup(db, files);
      } catch (err) {
        if (err instanceof BackupError) throw new DomainError('backup_unavailable', err.message);
        throw err;
      }
      log.info({ actor: principal.name, position: parts.manifest.ledger.position }, 'backup taken');
      return reply
        .header('content-type', 'application/x-tar')
        .header('cache-control', 'no-store')
        .header('content-disposition', `attachment; filename="florete-backup-${parts.manifest.created_at.replace(/[:.]/g, '')}.tar"`)
        .send(await backupTar(parts));
    } catch (err) {
      sendProblem(reply, toProblem(err, log));
      return reply;
    }
  });
}
