import { Inject, Injectable } from '@nestjs/common';
import { Role } from '#contracts';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
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
    const row = await this.db.kysely.selectFrom('node_credentials').select(['id', 'node', 'secret_hash', 'revoked_at']).where('id', '=', parsed.id).executeTakeFirst();
    const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
    if (!row || !ok || row.revoked_at) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    return { kind: 'node', node: row.node, credentialId: row.id };
  }
}
