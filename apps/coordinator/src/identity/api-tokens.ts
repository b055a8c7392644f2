import type { Kysely, Selectable, Transaction } from 'kysely';
import type { ApiTokenInfo, ApiTokenRequest, ApiTokenResponse, ApiTokenState, Role, TokenScope } from '#contracts';
import type { ApiTokensTable, Database } from '../db/index.js';
import { DomainError, quoteInput } from '../common/index.js';
import { lockLedger } from '../ledger/index.js';
import { recordIdentity } from './record-identity.js';
import type { TrustKeys } from '../trust/index.js';
import { issueSecret } from './secrets.js';

export interface CreatedApiToken {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  /** Shown once: only its hash is stored. */
  readonly token: string;
  readonly created_at: Date;
  readonly created_by: string;
  /** Null: it never expires. */
  readonly expires_at: Date | null;
  /** Null: every node. */
  readonly scope: TokenScope | null;
}

export interface NewApiToken {
  readonly name: string;
  readonly role: Role;
  /** Null: no expiry. */
  readonly expiresAt: Date | null;
  /** The nodes it may act on or read (never given for an admin token); absent: every node. */
  readonly scope?: TokenScope;
}

/** The columns a token is shown with: everything but its secret's hash. */
export const TOKEN_COLUMNS = ['id', 'name', 'role', 'created_at', 'created_by', 'expires_at', 'last_used_at', 'revoked_at', 'revoked_by', 'scope'] as const;
export type TokenRow = Pick<Selectable<ApiTokensTable>, (typeof TOKEN_COLUMNS)[number]>;

/**
 * When a token asked for with this life expires: `ttlSeconds` from now, never for `noExpiry`, and
 * otherwise after the coordinator's default (FLORETE_API_TOKEN_TTL; null there: never).
 */
export function expiryOf(request: { readonly ttl_seconds?: number; readonly no_expiry?: true }, defaultTtlSeconds: number | null, now: Date): Date | null {
  const seconds = request.no_expiry ? null : (request.ttl_seconds ?? defaultTtlSeconds);
  return seconds === null ? null : new Date(now.getTime() + seconds * 1000);
}

/** Revoked outranks expired: a revocation is someone's decision, an expiry only the calendar. */
export function tokenState(row: Pick<TokenRow, 'expires_at' | 'revoked_at'>, now: Date): ApiTokenState {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && new Date(row.expires_at).getTime() <= now.getTime()) return 'expired';
  return 'active';
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/** A token as the API shows it; `lastUse` is this replica's newest use not written yet, if any. */
export function tokenInfo(row: TokenRow, now: Date, lastUse?: Date): ApiTokenInfo {
  const written = row.last_used_at === null ? undefined : new Date(row.last_used_at);
  const last = lastUse && (!written || lastUse > written) ? lastUse : written;
  return {
    id: row.id,
    name: row.name,
    role: row.role as Role,
    state: tokenState(row, now),
    created_at: iso(row.created_at)!,
    created_by: row.created_by,
    expires_at: iso(row.expires_at),
    last_used_at: last ? last.toISOString() : null,
    revoked_at: iso(row.revoked_at),
    revoked_by: row.revoked_by,
    scope: row.scope,
  };
}

/**
 * Creates an API token and records `api_token_created` in the ledger, in the caller's transaction:
 * every token that can act, whether made over HTTP, at the first start or by `token create`, has its
 * event, with who made it (the event's actor) and when it expires. Only the hash of the secret is
 * stored or recorded.
 */
export async function issueApiToken(
  trx: Transaction<Database>,
  keys: TrustKeys,
  request: NewApiToken,
  actor: string,
  now: Date = new Date(),
): Promise<CreatedApiToken> {
  if (request.scope !== undefined && request.role === 'admin') throw new TypeError('an admin token is never scoped');
  const s = issueSecret('flt');
  const scope = request.scope ?? null;
  await trx
    .insertInto('api_tokens')
    .values({
      id: s.id,
      name: request.name,
      role: request.role,
      secret_hash: s.hash,
      created_at: now,
      created_by: actor,
      expires_at: request.expiresAt,
      scope: scope === null ? null : JSON.stringify(scope),
    })
    .execute();
  // The scope is recorded only when there is one: an unscoped token's event reads as it always has.
  await recordIdentity(
    trx,
    keys,
    'api',
    'api_token_created',
    { id: s.id, name: request.name, role: request.role, expires_at: iso(request.expiresAt), ...(scope ? { scope } : {}) },
    actor,
  );
  return { id: s.id, name: request.name, role: request.role, token: s.token, created_at: now, created_by: actor, expires_at: request.expiresAt, scope };
}

export async function countApiTokens(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('api_tokens')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function listApiTokens(db: Kysely<Database>): Promise<TokenRow[]> {
  return db.selectFrom('api_tokens').select(TOKEN_COLUMNS).orderBy('created_at').orderBy('id').execute();
}

/**
 * The token `ref` names: its id, else its name. A name held by several tokens means the one of them
 * not revoked that is still active, or the only one not revoked; more than that is ambiguous, and
 * the refusal lists their ids. A name whose tokens are all revoked answers the newest of them.
 */
function pick(rows: readonly TokenRow[], ref: string, now: Date): TokenRow {
  const byId = rows.find((r) => r.id === ref);
  if (byId) return byId;
  const named = rows.filter((r) => r.name === ref);
  if (named.length === 0) throw new DomainError('unknown_token', `no API token has the name or id ${quoteInput(ref)} (retectl token list shows them all)`);
  const live = named.filter((r) => !r.revoked_at);
  if (live.length === 0) return named[named.length - 1];
  const active = live.filter((r) => tokenState(r, now) === 'active');
  if (active.length === 1) return active[0];
  if (active.length === 0 && live.length === 1) return live[0];
  const candidates = active.length > 0 ? active : live;
  throw new DomainError(
    'ambiguous_token',
    `${candidates.length} API tokens named ${quoteInput(ref)} are not revoked: revoke one by its id (${candidates.map((r) => r.id).join(', ')})`,
    {
      tokens: candidates.map((r) => ({ id: r.id, state: tokenState(r, now), created_at: iso(r.created_at), expires_at: iso(r.expires_at) })),
    },
  );
}

/**
 * Revokes the token `ref` names (its id or its name) and records `api_token_revoked` with who did
 * it, in one transaction under the ledger lock: two admins revoking the last two admin tokens at
 * once, on two replicas, are decided one after the other, and the second is refused. Every replica
 * reads a token's row on each request, so the revocation holds everywhere once this commits.
 *
 * The last admin token that has not expired is never revoked here: with it gone nobody could make
 * another over the API, and the way back would be the coordinator's own command on its machine.
 */
export async function revokeApiToken(trx: Transaction<Database>, keys: TrustKeys, ref: string, actor: string, now: Date = new Date()): Promise<TokenRow> {
  await lockLedger(trx);
  const rows = await trx
    .selectFrom('api_tokens')
    .select(TOKEN_COLUMNS)
    .where((eb) => eb.or([eb('id', '=', ref), eb('name', '=', ref)]))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const target = pick(rows, ref, now);
  if (target.revoked_at) {
    throw new DomainError(
      'already_revoked',
      `API token ${target.name} (id ${target.id}) was already revoked at ${iso(target.revoked_at)}${target.revoked_by ? ` by ${target.revoked_by}` : ''}`,
      { id: target.id, name: target.name },
    );
  }
  if (target.role === 'admin' && tokenState(target, now) === 'active') {
    const others = await trx
      .selectFrom('api_tokens')
      .select('id')
      .where('role', '=', 'admin')
      .where('id', '!=', target.id)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .limit(1)
      .execute();
    if (others.length === 0) {
      throw new DomainError(
        'last_admin_token',
        `API token ${target.name} (id ${target.id}) is the last admin token that has not expired: revoked, nobody could administer the coordinator over the API. Create another admin token first (retectl token create --role admin --name <who>), then revoke this one; with no admin token at hand, the break-glass way is the coordinator's own command on its machine, as its user: florete-coordinator token create-admin`,
        { id: target.id, name: target.name },
      );
    }
  }
  const revoked = await trx
    .updateTable('api_tokens')
    .set({ revoked_at: now, revoked_by: actor })
    .where('id', '=', target.id)
    .returning(TOKEN_COLUMNS)
    .executeTakeFirstOrThrow();
  await recordIdentity(trx, keys, 'api', 'api_token_revoked', { id: target.id, name: target.name, role: target.role }, actor);
  return revoked;
}

/**
 * An admin's request for a token, answered once with its secret: expiring after `ttl_seconds`, the
 * configured default (`defaultTtlSeconds`, null for none) when neither that nor `no_expiry` is given,
 * as `default_expiry` says. Issued and recorded in one transaction.
 */
export async function createApiToken(
  db: Kysely<Database>,
  keys: TrustKeys,
  req: ApiTokenRequest,
  defaultTtlSeconds: number | null,
  actor: string,
  now: Date = new Date(),
): Promise<ApiTokenResponse> {
  const expiresAt = expiryOf(req, defaultTtlSeconds, now);
  const created = await db
    .transaction()
    .execute((trx) => issueApiToken(trx, keys, { name: req.name, role: req.role, expiresAt, ...(req.scope ? { scope: req.scope } : {}) }, actor, now));
  return {
    id: created.id,
    name: created.name,
    role: created.role,
    token: created.token,
    created_at: created.created_at.toISOString(),
    created_by: created.created_by,
    expires_at: created.expires_at?.toISOString() ?? null,
    scope: created.scope === null ? null : [...created.scope],
    default_expiry: req.ttl_seconds === undefined && req.no_expiry === undefined,
  };
}
