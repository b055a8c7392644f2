import { KeyRotationResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';

export interface KeysRotateOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** Has the running coordinator add a signing key (admin); prints the new kid, which a script can keep. */
export async function run(options: KeysRotateOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', '/v1/keys/rotate', KeyRotationResponse);
  if (options.json) return outJson(body);
  out(body.kid);
  const older = body.jwks.keys.length - 1;
  note(`bundles are signed with ${body.kid} from now on; the JWKS keeps the ${older} older key${older === 1 ? '' : 's'}`);
}
