import { Inject, Injectable } from '@nestjs/common';
import { Role } from '#contracts';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import type { RevocationReason } from '../db/database.js';
import { DomainError } from '../common/domain-error.js';
import { bearerOf, parseSecret, secretMatches } from './secrets.js';
import type { Principal } from './principal.js';

@Injectable()
export class AuthService {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** Resolves a bearer header to a principal; anything unknown, malformed or revoked is a 401. */
  async authenticate(header: string | string[] | undefined): Promise<Principal> {
    const token = bearerOf(header);
    if (!token) throw new DomainError('unauthenticated', 'missing bearer token: send Authorization: Bearer <token>');
    const parsed = parseSecret(token);
    if (!parsed || parsed.kind === 'fle') throw new DomainError('unauthenticated', 'bearer token is malformed or of the wrong kind');
    if (parsed.kind === 'flt') {
      const row = await this.db.kysely.selectFrom('api_tokens').select(['id', 'name', 'role', 'secret_hash', 'revoked_at']).where('id', '=', parsed.id).executeTakeFirst();
      const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
      if (!row || !ok || row.revoked_at) throw new DomainError('unauthenticated', 'API token is unknown or revoked');
      return { kind: 'api', id: row.id, name: row.name, role: Role.parse(row.role) };
    }
    const row = await this.db.kysely
      .selectFrom('node_credentials as c')
      .leftJoin('node_heads as h', 'h.node', 'c.node')
      .select(['c.id', 'c.node', 'c.secret_hash', 'c.revoked_at', 'c.revoked_reason', 'h.version', 'h.retired'])
      .where('c.id', '=', parsed.id)
      .executeTakeFirst();
    const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
    if (!row || !ok) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    if (row.revoked_at) throw refusedNodeCredential(row.node, row.revoked_reason, row.retired ? row.version : null);
    return { kind: 'node', node: row.node, credentialId: row.id };
  }
}

/**
 * The answer to a revoked node credential. Revoked because its node was retired, it says so with a
 * code of its own: the agent then stops polling as if re-enrolling were the fix. Only a caller that
 * proved the secret learns the reason.
 */
export function refusedNodeCredential(node: string, reason: RevocationReason | null, retiredVersion: number | null): DomainError {
  if (reason === 'retired') {
    const at = retiredVersion === null ? '' : ` at version ${retiredVersion}`;
    return new DomainError('retired_credential', `node ${node} was retired${at}: its credential was revoked once it applied its final, empty set`, { node, version: retiredVersion });
  }
  return new DomainError('unauthenticated', 'node credential is unknown or revoked');
}
