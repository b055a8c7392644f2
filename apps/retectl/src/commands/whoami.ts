import { WhoamiResponse, type Role } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { expiryCell } from './token-list.js';

/** As read: a coordinator that predates token scopes answers without one. */
const Whoami = WhoamiResponse.partial({ scope: true });

export interface WhoamiOptions extends ConnectionFlags {
  readonly json?: boolean;
}

const MAY: Record<Role, string> = {
  reader: 'read history, status, publishes, the ledger and the audit mirror',
  publisher: 'what a reader may, and upload, publish, roll back, retire and steer rollouts',
  admin: 'what a publisher may, and issue, list and revoke tokens, revoke node credentials, rotate keys and take backups',
};

/** What a scope means for this token, in a line. */
export function scopeLine(scope: readonly string[] | null, role: Role): string {
  if (scope === null) return 'every node';
  const acts = role === 'reader' ? '' : '; a publish, rollback or retirement that would change another node is refused whole';
  return `${scope.join(', ')} (only these nodes: by name, tag:<name> or group:<name>${acts}; node lists, publishes and rollouts leave the others out; the ledger's events, the metrics and the audit mirror need an unscoped token)`;
}

/** The API token in use: its name (the actor the ledger records), role, and until when it works. */
export async function run(options: WhoamiOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', '/v1/whoami', Whoami);
  if (options.json) return outJson(body);
  const expires = body.expires_at === null ? 'never' : `${body.expires_at} (${expiryCell(body, new Date())})`;
  const lines: [string, string][] = [
    ['name', `${body.name} (recorded as the actor of what this token does)`],
    ['id', body.id],
    ['role', body.role],
    ['may', MAY[body.role]],
    ['scope', scopeLine(body.scope ?? null, body.role)],
    ['expires', expires],
    ['created', `${body.created_at} by ${body.created_by}`],
  ];
  out(lines.map(([k, v]) => `${k.padEnd(9)}${v}`).join('\n'));
}
