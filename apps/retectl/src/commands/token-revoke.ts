import { ApiTokenInfo } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';

export interface TokenRevokeOptions extends ConnectionFlags {
  /** Its name or its id (not `token`: that is the API token in use, ConnectionFlags). */
  readonly ref: string;
  readonly json?: boolean;
}

/** Revokes an API token (admin): every replica refuses it from the moment the coordinator answers. */
export async function run(options: TokenRevokeOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('DELETE', `/v1/api-tokens/${encodeURIComponent(options.ref)}`, ApiTokenInfo);
  if (options.json) return outJson(body);
  out(body.id);
  note(
    `revoked the ${body.role} API token ${body.name} (id ${body.id}): every request with it is refused from now on (401 token_revoked); recorded in the ledger as yours`,
  );
}
