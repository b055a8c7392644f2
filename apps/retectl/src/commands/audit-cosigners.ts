import { CheckpointAuditError } from '#bundle';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { trustDocuments } from '../audit/coordinator-reads.js';
import { verifyCosigners } from '../audit/cosigners.js';

export interface AuditCosignersOptions extends ConnectionFlags {
  /** How many nodes must vouch for the tree (cosigned it, or a larger tree that extends it). */
  readonly witnesses: number;
  readonly json?: boolean;
}

const MAX_NAMED = 10;

/**
 * `audit verify --witnesses K`: the fleet's cosignatures of the ledger's tree, each checked against
 * the key the ledger recorded for its node; passes when at least K nodes vouch for a tree that the
 * tree now extends, and no cosignature is refused. Exit 1 otherwise.
 */
export async function run(options: AuditCosignersOptions): Promise<number> {
  const client = new CoordinatorClient(resolveConnection(options));
  let verdict;
  try {
    verdict = await verifyCosigners(client, await trustDocuments(client), options.witnesses);
  } catch (err) {
    if (!(err instanceof CheckpointAuditError)) throw err;
    const detail = `the tree checkpoint: ${err.code}: ${err.message}`;
    if (options.json) outJson({ witnesses: { ok: false, required: options.witnesses, refused: [{ node: null, reason: detail }] } });
    else out(`witnesses: DISAGREES: ${detail}`);
    return 1;
  }
  const ok = verdict.witnessed !== null && verdict.refused.length === 0;
  if (options.json) {
    outJson({ witnesses: { ok, ...verdict } });
    return ok ? 0 : 1;
  }
  const lines: string[] = [];
  const named = verdict.cosigners
    .slice()
    .sort((a, b) => b.size - a.size || (a.node < b.node ? -1 : 1))
    .slice(0, MAX_NAMED)
    .map((c) => `${c.node} (${c.size})`);
  const more = verdict.cosigners.length > MAX_NAMED ? `, and ${verdict.cosigners.length - MAX_NAMED} more` : '';
  lines.push(
    `witnesses: ${verdict.cosigners.length} node${verdict.cosigners.length === 1 ? '' : 's'} cosigned a tree the ledger's tree (${verdict.tree.size} entries) extends${named.length > 0 ? `: ${named.join(', ')}${more}` : ''}`,
  );
  for (const r of verdict.refused) lines.push(`witnesses: DISAGREES: ${r.node}: ${r.reason}`);
  if (verdict.witnessed !== null) lines.push(`witnesses: the first ${verdict.witnessed} entries are vouched for by at least ${verdict.required} nodes: agrees`);
  else lines.push(`witnesses: DISAGREES: fewer than ${verdict.required} nodes vouch for any tree (${verdict.cosigners.length} valid cosigners)`);
  out(lines.join('\n'));
  return ok ? 0 : 1;
}
