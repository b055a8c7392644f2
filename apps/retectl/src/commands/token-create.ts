import { EnrolmentTokenResponse } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson } from '../output.js';

export interface TokenCreateOptions extends ConnectionFlags {
  readonly node: string;
  /** Unset: an hour. */
  readonly ttlSeconds?: number;
  readonly json?: boolean;
}

const DEFAULT_TTL_SECONDS = 3600;

/** Creates a single-use enrolment token; it is shown here once and stored only as a hash. */
export async function run(options: TokenCreateOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', '/v1/enrolment-tokens', EnrolmentTokenResponse, {
    json: { node: options.node, ttl_seconds: options.ttlSeconds ?? DEFAULT_TTL_SECONDS },
  });
  if (options.json) return outJson(body);
  out(body.token);
  note(`enrolment token for ${body.node}, single use, expires ${body.expires_at}; it is not shown again`);
}
