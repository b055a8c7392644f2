import { attributeCheckpoint, CheckpointAuditError, flagWitnesses, type HeldBy, type WitnessFlag } from '#bundle';
import { formatTable } from '../status.js';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { allWitnesses, trustDocuments } from '../audit/coordinator-reads.js';

export interface AuditWitnessesOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** The coordinator's own served checkpoint counts as one more witness, under this name. */
export const COORDINATOR_WITNESS = '(coordinator)';

type Flag = WitnessFlag | { readonly kind: 'unverified'; readonly witness: string; readonly position: number | null; readonly reason: string };

/**
 * Every node's held checkpoint, each checked against the trust chain, then against each other and
 * the ledger: one position with two hashes, or a held hash the ledger no longer has, is a ledger
 * rewritten or forked under the fleet. Exit 1 when anything is flagged.
 */
export async function run(options: AuditWitnessesOptions): Promise<number> {
  const client = new CoordinatorClient(resolveConnection(options));
  const documents = await trustDocuments(client);
  const { coordinator, items } = await allWitnesses(client);

  const flags: Flag[] = [];
  const held: HeldBy[] = [];
  const consider = (witness: string, note: string, ledgerHash: string | null, problem?: string) => {
    if (problem) return flags.push({ kind: 'unverified', witness, position: null, reason: problem });
    try {
      const { checkpoint } = attributeCheckpoint(note, documents);
      held.push({ witness, position: checkpoint.position, hash: checkpoint.hash, ledgerHash });
    } catch (err) {
      if (!(err instanceof CheckpointAuditError)) throw err;
      flags.push({ kind: 'unverified', witness, position: null, reason: `${err.code}: ${err.message}` });
    }
  };
  if (coordinator) consider(COORDINATOR_WITNESS, coordinator.note, coordinator.ledger_hash);
  for (const w of items) consider(w.node, w.note, w.ledger_hash, w.problem);
  flags.push(...flagWitnesses(held));

  if (options.json) {
    outJson({ ok: flags.length === 0, coordinator, witnesses: items, flags });
    return flags.length === 0 ? 0 : 1;
  }
  const rows = [
    ...(coordinator ? [[COORDINATOR_WITNESS, String(coordinator.position), coordinator.hash.slice(0, 16), coordinator.time, '-']] : []),
    ...items.map((w) => [w.node, w.position === null ? '?' : String(w.position), w.hash?.slice(0, 16) ?? '?', w.time ?? '?', w.reported_at ?? '-']),
  ];
  out(formatTable(['WITNESS', 'POSITION', 'HASH', 'SIGNED', 'REPORTED'], rows));
  out(
    flags.length === 0
      ? `no disagreement: ${items.length} node${items.length === 1 ? '' : 's'} and the coordinator agree with each other and with the ledger`
      : flags.map(describe).join('\n'),
  );
  return flags.length === 0 ? 0 : 1;
}

function describe(flag: Flag): string {
  switch (flag.kind) {
    case 'fork':
      return `FORK at position ${flag.position}: ${flag.hashes.map((h) => `${h.hash} held by ${h.witnesses.join(', ')}`).join('; ')}`;
    case 'ledger':
      return `LEDGER DISAGREES at position ${flag.position}: ${flag.witness} holds ${flag.held}; the ledger has ${flag.ledger ?? 'no such position'}`;
    case 'unverified':
      return `UNVERIFIED checkpoint held by ${flag.witness}: ${flag.reason}`;
    default: {
      const never: never = flag;
      throw new TypeError(`unknown flag ${JSON.stringify(never)}`);
    }
  }
}
