import { KeyRotationResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';

export interface KeysRotateOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/**
 * Has the running coordinator rotate its signing key (admin); prints the new kid, which a script can
 * keep. Agents walk to the new trust version by themselves: no node is re-enrolled.
 */
export async function run(options: KeysRotateOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', '/v1/keys/rotate', KeyRotationResponse);
  if (options.json) return outJson(body);
  out(body.kid);
  note(
    `trust version ${body.trust_version}: bundles are signed with ${body.kid} from now on; ${body.resigned} node head${body.resigned === 1 ? '' : 's'} moved to it (each bundle is signed with it when next fetched), the old key signs nothing more`,
  );
}
