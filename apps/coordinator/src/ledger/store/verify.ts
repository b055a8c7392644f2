import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';
import { ChainVerifier, type ChainVerdict } from '../domain/hash-chain.js';
import { allEvents } from './read-events.js';

/** Recomputes the hash chain from the first event and reports the first break. */
export async function verifyLedger(db: Kysely<Database>): Promise<ChainVerdict> {
  const verifier = new ChainVerifier();
  for await (const event of allEvents(db)) {
    const broken = verifier.push(event);
    if (broken) return broken;
  }
  return verifier.head();
}
