import { Inject, Injectable } from '@nestjs/common';
import { NO_LABELS, NODE_NAME_PATTERN, Role, scopeSelects, TokenScope } from '#contracts';
import { DB, type Db, type RevocationReason } from '../db/index.js';
import { DomainError, scopeOf, type Authenticator, type Principal } from '../common/index.js';
import { bearerOf, parseSecret, secretMatches } from './secrets.js';
import { readNodeLabels } from './node-labels.repository.js';
import { ApiTokenUses } from './api-token-uses.js';

@Injectable()
export class AuthService implements Authenticator {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly uses: ApiTokenUses,
  ) {}

  /**
   * Resolves a bearer header to a principal; anything unknown, malformed, expired or revoked is a
   * 401. An API token's row is read on every request, on every replica, never from memory: a
   * revocation or an expiry holds everywhere from the moment it commits (or passes).
   */
  async authenticate(header: string | string[] | undefined): Promise<Principal> {
    const token = bearerOf(header);
    if (!token) throw new DomainError('unauthenticated', 'missing bearer token: send Authorization: Bearer <token>');
    const parsed = parseSecret(token);
    if (!parsed || parsed.kind === 'fle') throw new DomainError('unauthenticated', 'bearer token is malformed or of the wrong kind');
    if (parsed.kind === 'flt') {
      const row = await this.db.kysely
        .selectFrom('api_tokens')
        .select(['id', 'name', 'role', 'secret_hash', 'expires_at', 'revoked_at', 'revoked_by', 'scope'])
        .where('id', '=', parsed.id)
        .executeTakeFirst();
      const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
      // Told apart only once the secret is proven: a guess learns nothing about which tokens exist.
      if (!row || !ok) throw new DomainError('unauthenticated', 'API token is unknown or revoked');
      const now = new Date();
      if (row.revoked_at) {
        const by = row.revoked_by ? ` by ${row.revoked_by}` : '';
        throw new DomainError(
          'token_revoked',
          `API token ${row.name} (id ${row.id}) was revoked at ${new Date(row.revoked_at).toISOString()}${by}: ask an admin for a new one`,
          {
            id: row.id,
            name: row.name,
            revoked_at: new Date(row.revoked_at).toISOString(),
          },
        );
      }
      if (row.expires_at && new Date(row.expires_at).getTime() <= now.getTime()) {
        const at = new Date(row.expires_at).toISOString();
        throw new DomainError(
          'token_expired',
          `API token ${row.name} (id ${row.id}) expired at ${at}: ask an admin for a new one (retectl token create --role ${row.role} --name ${row.name})`,
          {
            id: row.id,
            name: row.name,
            expired_at: at,
          },
        );
      }
      this.uses.seen(row.id, now);
      // An admin is never held to a scope, whatever its row says.
      const role = Role.parse(row.role);
      return { kind: 'api', id: row.id, name: row.name, role, scope: role === 'admin' || row.scope === null ? null : TokenScope.parse(row.scope) };
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

  /**
   * Refuses a scoped token a route about one node outside its scope, by the node's recorded labels
   * (a node without any is selected by its name only). A malformed name is left to the route's own
   * check, which says what is wrong with it.
   */
  async requireInScope(p: Principal, node: string): Promise<void> {
    const scope = scopeOf(p);
    if (scope === null || !NODE_NAME_PATTERN.test(node)) return;
    const labels = (await readNodeLabels(this.db.kysely, [node])).get(node) ?? NO_LABELS;
    if (!scopeSelects(scope, node, labels)) {
      throw new DomainError('out_of_scope', `node ${node} is outside this token's scope (${scope.join(', ')}): ask an admin for a token whose scope holds it`, {
        nodes: [node],
        scope,
      });
    }
  }
}

/**
 * The answer to a revoked node credential. Revoked because its node was retired, it says so with a
 * code of its own: the agent then stops polling as if re-enrolling were the fix. Only a caller that
 * proved the secret learns the reason.
 */
export function refusedNodeCredential(node: string, reason: RevocationReason | null, retiredVersion: number | null): DomainError {
  if (reason === 'lost') {
    const at = retiredVersion === null ? '' : ` at version ${retiredVersion}`;
    return new DomainError(
      'retired_credential',
      `node ${node} was retired as lost${at}: its credential was revoked at once, without the node applying its final, empty set, so whatever it still runs was never removed by Florete; this machine is not trusted any more: wipe it, or enrol it again as a new node with a new token`,
      { node, version: retiredVersion, lost: true },
    );
  }
  if (reason === 'retired') {
    const at = retiredVersion === null ? '' : ` at version ${retiredVersion}`;
    return new DomainError('retired_credential', `node ${node} was retired${at}: its credential was revoked once it applied its final, empty set`, {
      node,
      version: retiredVersion,
    });
  }
  return new DomainError('unauthenticated', 'node credential is unknown or revoked');
}
