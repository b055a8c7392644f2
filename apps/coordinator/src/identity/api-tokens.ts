import type { Kysely, Transaction } from 'kysely';
import type { Role } from '#contracts';
import type { Database } from '../db/database.js';
import { recordIdentity } from '../ledger/store/record-identity.js';
import type { TrustKeys } from '../trust/signing-trust.js';
import { issueSecret } from './secrets.js';

export interface CreatedApiToken {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  /** Shown once: only its hash is stored. */
  readonly token: string;
}

/**
 * Creates an API token and records `api_token_created` in the ledger, in the caller's transaction:
 * every token that can act, whether made over HTTP, at the first start or by `token create`, has its
 * event. Only the hash of the secret is stored or recorded.
 */
export async function issueApiToken(trx: Transaction<Database>, keys: TrustKeys, request: { readonly name: string; readonly role: Role }, actor: string): Promise<CreatedApiToken> {
  const s = issueSecret('flt');
  await trx.insertInto('api_tokens').values({ id: s.id, name: request.name, role: request.role, secret_hash: s.hash }).execute();
  await recordIdentity(trx, keys, 'api', 'api_token_created', { id: s.id, name: request.name, role: request.role }, actor);
  return { id: s.id, name: request.name, role: request.role, token: s.token };
}

export async function countApiTokens(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('api_tokens').select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
