import { ApiTokenInfo } from '#contracts';
import { z } from 'zod';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { note, out, outJson, plural } from '../output.js';
import { formatAge, formatSeconds, formatTable } from '../status.js';

/** As read: a coordinator that predates token scopes answers without them, every token unscoped. */
const TokenList = z.object({ items: z.array(ApiTokenInfo.partial({ scope: true })) });

/** A token's scope as one cell: its selectors, or `all` for a token held to none. */
export function scopeCell(t: { readonly scope?: readonly string[] | null }): string {
  return t.scope ? t.scope.join(',') : 'all';
}

export interface TokenListOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** `in 89d23h`, `2d ago`, `never`: an expiry as it reads at `now`. */
export function expiryCell(t: Pick<ApiTokenInfo, 'expires_at'>, now: Date): string {
  if (t.expires_at === null) return 'never';
  const left = (Date.parse(t.expires_at) - now.getTime()) / 1000;
  return left > 0 ? `in ${formatSeconds(left)}` : `${formatSeconds(-left)} ago`;
}

function stateCell(t: Pick<ApiTokenInfo, 'state' | 'revoked_by'>): string {
  return t.state === 'revoked' && t.revoked_by ? `revoked by ${t.revoked_by}` : t.state;
}

/** Every API token (admin): never a secret, only what an operator decides a revocation on. */
export async function run(options: TokenListOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', '/v1/api-tokens', TokenList);
  if (options.json) return outJson(body);
  const now = new Date();
  const rows = body.items.map((t) => [
    t.name,
    t.id,
    t.role,
    scopeCell(t),
    stateCell(t),
    t.created_by,
    formatAge(t.created_at, now) + ' ago',
    expiryCell(t, now),
    t.last_used_at === null ? 'never' : `${formatAge(t.last_used_at, now)} ago`,
  ]);
  out(formatTable(['NAME', 'ID', 'ROLE', 'SCOPE', 'STATE', 'CREATED BY', 'CREATED', 'EXPIRES', 'LAST USED'], rows).trimEnd());
  const count = (state: string) => body.items.filter((t) => t.state === state).length;
  note(`${plural(count('active'), 'active token')}, ${count('expired')} expired, ${count('revoked')} revoked; revoke one with retectl token revoke <name|id>`);
}
