import { z } from 'zod';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out } from '../output.js';

/** The verdict is printed whole: `?mirror=true` adds fields this client need not know. */
const Verdict = z.looseObject({ ok: z.boolean(), position: z.number() });

export interface LedgerVerifyOptions extends ConnectionFlags {
  /** Also check the git audit mirror against the ledger (`retectl audit verify`). */
  readonly mirror?: boolean;
  readonly json?: boolean;
}

/** Asks the coordinator to recompute the hash chain; prints its verdict and fails when it found a break. */
export async function run(options: LedgerVerifyOptions): Promise<number> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', `/v1/ledger/verify${options.mirror ? '?mirror=true' : ''}`, Verdict);
  out(JSON.stringify(body, null, options.json ? 2 : undefined));
  return body.ok ? 0 : 1;
}
