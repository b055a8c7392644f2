import { readFileSync } from 'node:fs';
import { attributeCheckpoint, CheckpointAuditError, firstDisagreement, type AttributedCheckpoint } from '#bundle';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { RetectlError, usageError } from '../errors.js';
import { out, outJson } from '../output.js';
import { ledgerHashes, trustDocuments } from '../audit/coordinator-reads.js';
import { fetchMirrorLog, readMirrorLog, type MirrorCommit } from '../audit/mirror-log.js';

export interface AuditVerifyOptions extends ConnectionFlags {
  readonly checkpoint: string;
  /** false with --no-mirror. */
  readonly mirror?: boolean;
  /** A local clone of the mirror to read instead of cloning one from the coordinator. */
  readonly mirrorClone?: string;
  readonly json?: boolean;
}

/** One thing that does not agree with the kept checkpoint or with another source: where, what was expected, what was found. */
export interface Disagreement {
  readonly source: 'signature' | 'ledger' | 'mirror';
  readonly position: number;
  readonly expected: string | null;
  readonly found: string | null;
  readonly detail: string;
}

/**
 * Proves a kept checkpoint against today: its signature against the whole trust chain, the
 * ledger's hash at its position, and the git mirror's commit for that position; then the mirror
 * against the ledger, to name the first mirrored position where they part. Exit 1 on any
 * disagreement, each named with its source, position, and the expected and found hashes.
 */
export async function run(options: AuditVerifyOptions): Promise<number> {
  if (options.mirror === false && options.mirrorClone !== undefined) throw usageError('give --mirror-clone or --no-mirror, not both');
  let note: string;
  try {
    note = readFileSync(options.checkpoint, 'utf8');
  } catch (err) {
    throw new RetectlError('io', `cannot read the checkpoint file ${options.checkpoint}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const connection = resolveConnection(options);
  const client = new CoordinatorClient(connection);
  const disagreements: Disagreement[] = [];
  const lines: string[] = [];
  let kept: AttributedCheckpoint;
  try {
    kept = attributeCheckpoint(note, await trustDocuments(client));
  } catch (err) {
    if (!(err instanceof CheckpointAuditError)) throw err;
    if (err.code === 'checkpoint_malformed') throw new RetectlError('usage', `${options.checkpoint}: ${err.message}`);
    const d: Disagreement = { source: 'signature', position: positionOf(note), expected: null, found: null, detail: `${err.code}: ${err.message}` };
    return report(options, { ok: false, checkpoint: null, ledger: null, mirror: null, disagreements: [d] }, [`signature: DISAGREES: ${d.detail}`]);
  }
  const c = kept.checkpoint;
  lines.push(`checkpoint ${c.origin} at position ${c.position}, hash ${c.hash}, signed ${c.time} by key ${kept.kid} (trust version ${c.trustVersion})`);
  if (kept.replaced)
    lines.push(`  key ${kept.kid} was rotated out in trust version ${kept.replaced.version} (${kept.replaced.at}); what it signed before stays valid`);
  if (kept.revoked) {
    lines.push(
      `  WARNING: key ${kept.kid} was revoked in trust version ${kept.revoked.version} (${kept.revoked.at}); the checkpoint claims an earlier time, which only your own record of when you kept it can confirm`,
    );
  }

  const ledgerHashAt = ledgerHashes(client);
  const ledgerHash = await ledgerHashAt(c.position);
  const ledger = { position: c.position, hash: ledgerHash, agrees: ledgerHash === c.hash };
  if (ledger.agrees) lines.push(`ledger: position ${c.position} has hash ${c.hash}: agrees`);
  else {
    const found = ledgerHash === null ? 'the ledger has no such position (it is shorter: rolled back or truncated)' : `the ledger has ${ledgerHash}`;
    disagreements.push({
      source: 'ledger',
      position: c.position,
      expected: c.hash,
      found: ledgerHash,
      detail: `at position ${c.position} the checkpoint says ${c.hash}; ${found}`,
    });
    lines.push(`ledger: DISAGREES at position ${c.position}: the checkpoint says ${c.hash}; ${found}`);
  }

  let mirror: Record<string, unknown> | null = null;
  if (options.mirror !== false) {
    const commits = options.mirrorClone ? await readMirrorLog(options.mirrorClone) : await fetchMirrorLog(connection);
    const at = commits.find((m) => m.position === c.position) ?? null;
    if (at && at.hash === c.hash) lines.push(`mirror: commit ${at.commit} (Ledger-Position ${c.position}) carries hash ${c.hash}: agrees`);
    else if (at) {
      disagreements.push({
        source: 'mirror',
        position: c.position,
        expected: c.hash,
        found: at.hash,
        detail: `mirror commit ${at.commit} for position ${c.position} carries ${at.hash}; the checkpoint says ${c.hash}`,
      });
      lines.push(`mirror: DISAGREES at position ${c.position}: commit ${at.commit} carries ${at.hash}; the checkpoint says ${c.hash}`);
    } else {
      const before = commits.filter((m) => m.position < c.position).at(-1);
      lines.push(
        `mirror: no commit carries Ledger-Position ${c.position} (only publishes are mirrored${before ? `; the latest before it is at position ${before.position}` : ''}): checked against the ledger below`,
      );
    }
    const parted = await firstDisagreement<MirrorCommit>(commits, ledgerHashAt);
    if (parted) {
      const { sighting: m, ledger: found } = parted;
      const previous = commits[commits.indexOf(m) - 1];
      const where = previous ? `after position ${previous.position}, where they still agree,` : '';
      const detail =
        `mirror commit ${m.commit} records hash ${m.hash} at position ${m.position}; the ledger has ${found ?? 'no such position'}: the ledger was rewritten ${where} at or before position ${m.position}`.replace(
          / {2}/g,
          ' ',
        );
      disagreements.push({ source: 'mirror', position: m.position, expected: m.hash, found, detail });
      lines.push(`mirror: DISAGREES with the ledger: ${detail}`);
    } else lines.push(`mirror: all ${commits.length} mirrored positions agree with the ledger`);
    mirror = {
      commits: commits.length,
      at: at && { commit: at.commit, hash: at.hash, agrees: at.hash === c.hash },
      first_disagreement: parted && {
        position: parted.sighting.position,
        commit: parted.sighting.commit,
        mirror_hash: parted.sighting.hash,
        ledger_hash: parted.ledger,
      },
    };
  }
  lines.push(
    disagreements.length === 0
      ? 'verified: the checkpoint is consistent with the ledger and the mirror'
      : `${disagreements.length} disagreement${disagreements.length === 1 ? '' : 's'}`,
  );
  const checkpoint = {
    origin: c.origin,
    position: c.position,
    hash: c.hash,
    time: c.time,
    trust_version: c.trustVersion,
    kid: kept.kid,
    replaced: kept.replaced,
    revoked: kept.revoked,
  };
  return report(options, { ok: disagreements.length === 0, checkpoint, ledger, mirror, disagreements }, lines);
}

function report(options: AuditVerifyOptions, verdict: { ok: boolean; disagreements: Disagreement[] } & Record<string, unknown>, lines: string[]): number {
  if (options.json) outJson(verdict);
  else out(lines.join('\n'));
  return verdict.ok ? 0 : 1;
}

/** The position a note claims, for naming it when its signature fails; -1 when even that is unreadable. */
function positionOf(note: string): number {
  const size = note.split('\n')[1];
  return /^[0-9]{1,15}$/.test(size ?? '') ? Number(size) : -1;
}
