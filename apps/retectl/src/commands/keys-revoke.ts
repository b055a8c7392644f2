import { KeyRotationResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';

export interface KeysRevokeOptions extends ConnectionFlags {
  readonly kid: string;
  readonly json?: boolean;
}

/** Revokes a signing key (admin): agents refuse anything it signs once they walk to the new trust version. */
export async function run(options: KeysRevokeOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', `/v1/keys/${encodeURIComponent(options.kid)}/revoke`, KeyRotationResponse);
  if (options.json) return outJson(body);
  out(body.kid);
  const rotated =
    body.kid !== options.kid && body.resigned > 0
      ? `; it was the signer, so ${body.kid} signs from now on (${body.resigned} node head${body.resigned === 1 ? '' : 's'} moved to it)`
      : '';
  note(`trust version ${body.trust_version} revokes ${options.kid}${rotated}`);
}
