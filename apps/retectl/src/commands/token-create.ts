import { ApiTokenResponse, EnrolmentTokenResponse, MAX_API_TOKEN_TTL, MIN_API_TOKEN_TTL, ScopeSelector, TokenScope, type Role } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { usageError } from '../errors.js';
import { note, out, outJson } from '../output.js';
import { formatSeconds } from '../status.js';

export interface TokenCreateOptions extends ConnectionFlags {
  /** An enrolment token for this node; or, with role and name instead, an API token. */
  readonly node?: string;
  readonly role?: Role;
  readonly name?: string;
  /** Unset: an hour for an enrolment token, the coordinator's default for an API token. */
  readonly ttlSeconds?: number;
  /** false: --no-expiry (API tokens only). */
  readonly expiry?: boolean;
  /** --scope, as given: the selectors a publisher or reader token is held to. */
  readonly scope?: readonly string[];
  readonly json?: boolean;
}

const DEFAULT_TTL_SECONDS = 3600;
const ENROLMENT_MAX_TTL = 30 * 86400;

type Wanted =
  | { readonly kind: 'enrolment'; readonly node: string }
  | { readonly kind: 'api'; readonly role: Role; readonly name: string; readonly ttlSeconds?: number; readonly noExpiry: boolean; readonly scope?: TokenScope };

/** Which token the flags ask for; anything ambiguous or half-given is a usage error saying what to give. */
function wanted(o: TokenCreateOptions): Wanted {
  const api = o.role !== undefined || o.name !== undefined;
  const noExpiry = o.expiry === false;
  if (o.node !== undefined && api) throw usageError('give a node (an enrolment token) or --role and --name (an API token), not both');
  if (o.node !== undefined) {
    if (o.scope !== undefined) throw usageError('--scope is for API tokens: an enrolment token is for its one node already');
    if (noExpiry) throw usageError('--no-expiry is for API tokens: an enrolment token is single use and always expires (--ttl, default 1h)');
    if (o.ttlSeconds !== undefined && o.ttlSeconds > ENROLMENT_MAX_TTL) throw usageError('--ttl of an enrolment token must be between 1m and 30d');
    return { kind: 'enrolment', node: o.node };
  }
  if (!api) throw usageError('give a node for an enrolment token (token create <node>) or --role reader|publisher|admin --name <name> for an API token');
  if (o.role === undefined) throw usageError('an API token needs --role reader|publisher|admin');
  if (o.name === undefined) throw usageError('an API token needs --name: who holds it, recorded as the actor of what it does');
  if (o.ttlSeconds !== undefined && noExpiry) throw usageError('give --ttl or --no-expiry, not both');
  if (o.ttlSeconds !== undefined && (o.ttlSeconds < MIN_API_TOKEN_TTL || o.ttlSeconds > MAX_API_TOKEN_TTL)) {
    throw usageError('--ttl of an API token must be between 1m and 366d (--no-expiry: one that never expires)');
  }
  const scope = o.scope === undefined ? undefined : scopeOf(o.scope, o.role);
  return {
    kind: 'api',
    role: o.role,
    name: o.name,
    ...(o.ttlSeconds !== undefined ? { ttlSeconds: o.ttlSeconds } : {}),
    noExpiry,
    ...(scope ? { scope } : {}),
  };
}

/** The --scope selectors, each checked as the coordinator will check it. */
function scopeOf(given: readonly string[], role: Role): TokenScope {
  if (role === 'admin') throw usageError('an admin token is never scoped: give --scope to a publisher or reader token');
  const selectors = given.map((s) => s.trim()).filter((s) => s !== '');
  for (const s of selectors) {
    if (!ScopeSelector.safeParse(s).success)
      throw usageError(`--scope ${JSON.stringify(s)}: give a node name, tag:<name> or group:<name> (as the rete's ACL writes them)`);
  }
  const parsed = TokenScope.safeParse(selectors);
  if (!parsed.success) throw usageError('--scope: give between 1 and 100 selectors');
  return parsed.data;
}

/**
 * The answer as read: the token itself must be there, its expiry may not. A coordinator from before
 * tokens expired answers without it, and a token it created must still be shown, the only time it can be.
 */
const CreatedApiToken = ApiTokenResponse.partial({ created_at: true, created_by: true, expires_at: true, default_expiry: true, scope: true });

/** When an API token expires, as the note at its creation says it. */
export function expiryNote(body: Partial<Pick<ApiTokenResponse, 'created_at' | 'expires_at' | 'default_expiry'>>): string {
  if (body.expires_at === undefined || body.created_at === undefined) return 'no expiry (the coordinator predates expiring tokens)';
  if (body.expires_at === null) return 'never expires (--no-expiry)';
  const life = formatSeconds((Date.parse(body.expires_at) - Date.parse(body.created_at)) / 1000);
  return `expires ${body.expires_at} (in ${life}${body.default_expiry ? ", the coordinator's default: --ttl or --no-expiry to choose" : ''})`;
}

/**
 * Creates a single-use enrolment token for a node, or an API token with a role, through the running
 * coordinator. Either is shown here once: the coordinator keeps only its hash.
 */
export async function run(options: TokenCreateOptions): Promise<void> {
  const want = wanted(options);
  const client = new CoordinatorClient(resolveConnection(options));
  if (want.kind === 'api') {
    const json = {
      name: want.name,
      role: want.role,
      ...(want.ttlSeconds !== undefined ? { ttl_seconds: want.ttlSeconds } : {}),
      ...(want.noExpiry ? { no_expiry: true } : {}),
      ...(want.scope ? { scope: want.scope } : {}),
    };
    const { body } = await client.call('POST', '/v1/api-tokens', CreatedApiToken, { json });
    if (options.json) return outJson(body);
    out(body.token);
    const scope = body.scope ? `, held to ${body.scope.join(', ')}` : '';
    return note(`${body.role} API token for ${body.name} (id ${body.id})${scope}, ${expiryNote(body)}; it is not shown again`);
  }
  const { body } = await client.call('POST', '/v1/enrolment-tokens', EnrolmentTokenResponse, {
    json: { node: want.node, ttl_seconds: options.ttlSeconds ?? DEFAULT_TTL_SECONDS },
  });
  if (options.json) return outJson(body);
  out(body.token);
  note(`enrolment token for ${body.node}, single use, expires ${body.expires_at}; it is not shown again`);
}
