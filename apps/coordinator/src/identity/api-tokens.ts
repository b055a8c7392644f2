import type { Kysely } from 'kysely';
import type { Role } from '#contracts';
import type { Database } from '../db/database.js';
import { issueSecret } from './secrets.js';

export interface CreatedApiToken {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  /** Shown once: only its hash is stored. */
  readonly token: string;
}

export async function createApiToken(db: Kysely<Database>, name: string, role: Role): Promise<CreatedApiToken> {
  const s = issueSecret('flt');
  await db.insertInto('api_tokens').values({ id: s.id, name, role, secret_hash: s.hash }).execute();
  return { id: s.id, name, role, token: s.token };
}

export async function countApiTokens(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('api_tokens').select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
