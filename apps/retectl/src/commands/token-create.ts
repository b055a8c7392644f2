import { ApiTokenResponse, EnrolmentTokenResponse, type Role } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { usageError } from '../errors.js';
import { note, out, outJson } from '../output.js';

export interface TokenCreateOptions extends ConnectionFlags {
  /** An enrolment token for this node; or, with role and name instead, an API token. */
  readonly node?: string;
  readonly role?: Role;
  readonly name?: string;
  /** Of an enrolment token; unset: an hour. */
  readonly ttlSeconds?: number;
  readonly json?: boolean;
}

const DEFAULT_TTL_SECONDS = 3600;

type Wanted = { readonly kind: 'enrolment'; readonly node: string } | { readonly kind: 'api'; readonly role: Role; readonly name: string };

/** Which token the flags ask for; anything ambiguous or half-given is a usage error saying what to give. */
function wanted(o: TokenCreateOptions): Wanted {
  const api = o.role !== undefined || o.name !== undefined;
  if (o.node !== undefined && api) throw usageError('give a node (an enrolment token) or --role and --name (an API token), not both');
  if (o.node !== undefined) return { kind: 'enrolment', node: o.node };
  if (!api) throw usageError('give a node for an enrolment token (token create <node>) or --role reader|publisher|admin --name <name> for an API token');
  if (o.role === undefined) throw usageError('an API token needs --role reader|publisher|admin');
  if (o.name === undefined) throw usageError('an API token needs --name: who holds it, recorded as the actor of what it does');
  if (o.ttlSeconds !== undefined) throw usageError('--ttl is for enrolment tokens: API tokens do not expire');
  return { kind: 'api', role: o.role, name: o.name };
}

/**
 * Creates a single-use enrolment token for a node, or an API token with a role, through the running
 * coordinator. Either is shown here once: the coordinator keeps only its hash.
 */
export async function run(options: TokenCreateOptions): Promise<void> {
  const want = wanted(options);
  const client = new CoordinatorClient(resolveConnection(options));
  if (want.kind === 'api') {
    const { body } = await client.call('POST', '/v1/api-tokens', ApiTokenResponse, { json: { name: want.name, role: want.role } });
    if (options.json) return outJson(body);
    out(body.token);
    return note(`${body.role} API token for ${body.name} (id ${body.id}); it is not shown again`);
  }
  const { body } = await client.call('POST', '/v1/enrolment-tokens', EnrolmentTokenResponse, {
    json: { node: want.node, ttl_seconds: options.ttlSeconds ?? DEFAULT_TTL_SECONDS },
  });
  if (options.json) return outJson(body);
  out(body.token);
  note(`enrolment token for ${body.node}, single use, expires ${body.expires_at}; it is not shown again`);
}
