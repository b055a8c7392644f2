import { TrustChainError } from '#bundle';
import { TrustChainResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolvePublic, type ConnectionFlags } from '../config.js';
import { RetectlError } from '../errors.js';
import { keyHistory, type KeyHistory } from '../key-history.js';
import { note, out, outJson } from '../output.js';
import { formatTable } from '../status.js';

export interface KeysListOptions extends Pick<ConnectionFlags, 'coordinator' | 'cacert'> {
  readonly json?: boolean;
}

/**
 * Every signing key the coordinator's trust chain names, with its state and the trust versions that
 * listed, retired and revoked it: which kid to revoke, and what each one still vouches for. Read from
 * `GET /v1/trust`, which is public, and only once the chain verifies from version 1.
 */
export async function run(options: KeysListOptions): Promise<void> {
  const client = new CoordinatorClient(resolvePublic(options));
  const body = await client.getPublic('/v1/trust', TrustChainResponse);
  let history: KeyHistory;
  try {
    history = keyHistory(body.versions.map((v) => v.document));
  } catch (err) {
    if (err instanceof TrustChainError) throw new RetectlError('bad_response', `the coordinator's trust chain does not verify: ${err.message}`, { cause: err });
    throw err;
  }
  if (options.json) return outJson(history);
  const when = (version: number | null, at: string | null) => (version === null ? '-' : `${at} (v${version})`);
  const rows = history.keys.map((k) => [
    k.kid,
    k.kid === history.signer ? `${k.state}, signs` : k.state,
    when(k.listed_version, k.listed_at),
    when(k.retired_version, k.retired_at),
    when(k.revoked_version, k.revoked_at),
  ]);
  out(formatTable(['KID', 'STATE', 'SINCE', 'RETIRED', 'REVOKED'], rows).trimEnd());
  note(`trust version ${history.trust_version}: ${history.signer} signs bundles, checkpoints and the next trust version`);
}
