import { RetireResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson, plural } from '../output.js';

export interface RetireOptions extends ConnectionFlags {
  readonly node: string;
  readonly message?: string;
  /** Gone for good: revoke its credential now, with the retirement (admin). */
  readonly lost?: boolean;
  readonly json?: boolean;
}

/**
 * Stamps the node's final, empty version. Its agent applies it (removes what it installed) and its
 * credential is revoked once it reported doing so; for a lost node, one that will never apply it,
 * the credential is revoked at once, in the same transaction.
 */
export async function run(options: RetireOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const json = { ...(options.message ? { message: options.message } : {}), ...(options.lost ? { lost: true } : {}) };
  const { body } = await client.call('POST', `/v1/nodes/${encodeURIComponent(options.node)}/retire`, RetireResponse, { json });
  if (options.json) return outJson(body);
  for (const c of body.changed) out(`${c.node} ${c.from} -> ${c.to} (retired${options.lost ? ' as lost' : ''})`);
  if (!options.lost) return;
  const revoked = body.revoked_credentials ?? [];
  if (body.changed.length === 0) out(`${options.node} was retired already; now lost`);
  note(
    revoked.length > 0
      ? `${options.node}: ${plural(revoked.length, 'credential')} revoked at once; the machine is refused from now on (401 retired_credential), and whatever it still runs stays until someone wipes it`
      : `${options.node} held no live credential: nothing to revoke`,
  );
}
