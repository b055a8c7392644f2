import type { ActivationRecord, AgentStatus, Behind, BehindReason } from '#contracts';
import { loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { callControlSocket } from '../agent/control-socket.js';
import { AgentError } from '../errors.js';
import type { StateDir } from '../agent/state-dir.js';
import { Witness } from '../agent/witness.js';
import { WAYS_ON } from '../agent/retirement.js';

const BEHIND_REASON: Record<BehindReason, string> = {
  failed: 'its apply failed',
  rejected: 'rejected',
  dry_run: 'seen by a dry run only (the next pass applies it)',
  retired: 'the node was retired',
  pending: 'activation pending',
};

/** `version 3 seen, 2 in effect: its apply failed: vertex exited with 1 …`, or `no`. */
export function formatBehind(b: Behind | null): string {
  if (b === null) return 'no';
  const seen = b.seen_version === null ? 'an unverifiable bundle' : `version ${b.seen_version}`;
  return `${seen} seen, ${b.active_version} in effect: ${BEHIND_REASON[b.reason]}${b.detail ? `: ${b.detail}` : ''}`;
}

/** `stale since …` once the newest verified checkpoint is older than max_staleness, else `fresh`, with that checkpoint. */
export function formatFreshness(f: AgentStatus['freshness']): string {
  if (f === null) return '-';
  const held = f.checkpoint ? `checkpoint at position ${f.checkpoint.position} signed ${f.checkpoint.time}` : 'no checkpoint verified yet';
  return f.stale_since ? `stale since ${f.stale_since} (${held})` : `fresh (${held})`;
}

function formatActivation(a: ActivationRecord): string {
  const how = a.answer
    ? `${a.activation} (${a.answer})`
    : a.fallback
      ? `${a.activation} (hot reload not applied: ${a.fallback.code}: ${a.fallback.reason})`
      : a.activation;
  return `${a.version}: ${how} at ${a.at}`;
}

/**
 * Commit-confirmed, one line: `provisional 7 until <deadline> (back to 6; waiting for: checks)`,
 * `confirmed 7 at …`, `reverted 7 to 6 at …: <reason> (reported|not yet reported)`, `-`.
 */
export function formatConfirmation(c: AgentStatus['confirmation']): string {
  if (c === null) return '-';
  switch (c.state) {
    case 'provisional': {
      const p = c.provisional!;
      const waiting = [
        p.checks_passed_at ? null : `checks${p.check_failure ? ` (last: ${p.check_failure})` : ''}`,
        p.reached_at ? null : 'contact',
        p.mode === 'operator' && !p.operator_confirmed ? 'operator' : null,
      ].filter(Boolean);
      return `provisional ${p.version} until ${p.deadline} (back to ${p.previous}${waiting.length ? `; waiting for: ${waiting.join(', ')}` : ''})`;
    }
    case 'confirmed': {
      const k = c.confirmed!;
      return `confirmed ${k.version} at ${k.at}${k.by ? ` by ${k.by}` : ''}`;
    }
    case 'reverting':
    case 'reverted': {
      const r = c.reverted!;
      return `${c.state} ${r.version} to ${r.to} at ${r.at}: ${r.reason}${c.state === 'reverted' ? (r.reported_at ? ' (reported)' : ' (not yet reported)') : ''}`;
    }
  }
}

function formatWatch(w: AgentStatus['watch']): string {
  if (!w) return '-';
  if (w.state === 'off') return 'off (sync.watch: false): polling only';
  if (w.state === 'watching') return `watching${w.since ? ` since ${w.since}` : ''}`;
  return `on, not held now: ${w.reason ?? 'polling'}`;
}

export function formatStatus(s: AgentStatus): string {
  const rows: [string, string][] = [
    ['lifecycle', s.since === null ? s.lifecycle : `${s.lifecycle} since ${s.since}`],
    ...(s.retired
      ? [['retired', `${s.retired.version === null ? '' : `at version ${s.retired.version} `}since ${s.retired.at}: ${WAYS_ON}`] as [string, string]]
      : []),
    ['node', s.node ?? '-'],
    ['coordinator', s.coordinator ?? '-'],
    ['active version', s.local_set && s.active_version === 0 ? '0 (local set)' : String(s.active_version)],
    ['applied version', s.local_set ? `local set ${s.local_set.set_digest}` : String(s.applied_version)],
    ...(s.local_set ? [['local set', `node ${s.local_set.node}, from ${s.local_set.source}, applied at ${s.local_set.applied_at}`] as [string, string]] : []),
    ['staged versions', s.staged_versions.join(', ') || '-'],
    ['high-water mark', String(s.high_water)],
    ['behind', formatBehind(s.behind)],
    ['confirmation', formatConfirmation(s.confirmation)],
    ['last poll', s.last_poll ?? '-'],
    ['last contact', s.last_contact ?? '-'],
    ['next poll', s.next_poll ?? '-'],
    ['watch', formatWatch(s.watch)],
    ['last result', s.last_result ?? '-'],
    ['last error', s.last_error ?? '-'],
    ['trust version', s.trust_version === null ? 'enrolment key only' : String(s.trust_version)],
    ['freshness', formatFreshness(s.freshness)],
  ];
  if (s.vertex) rows.push(['vertex', `${s.vertex.pid === null ? 'not running' : `pid ${s.vertex.pid}`}, ${s.vertex.starts} start(s)`]);
  // Newest first: how each recently applied version reached the vertex.
  s.activations.forEach((a, i) => rows.push([i === 0 ? 'activations' : '', formatActivation(a)]));
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

export type RunOptions = CommonOptions & { json?: boolean; checkpoint?: boolean };

/**
 * The newest tree checkpoint this node verified, as a C2SP signed note with the node's own
 * cosignature line added to the coordinator's signature: what an auditor collects from the fleet
 * without asking the coordinator. Read from the state dir; no daemon needed.
 */
export function cosignedCheckpoint(dir: StateDir, now: Date): { note: string; witness: string | null } {
  const identity = dir.readIdentity();
  if (!identity) throw new AgentError('not_enrolled', `${dir.root} holds no enrolment: no checkpoint to show`);
  const held = dir.readTreeCheckpoint();
  if (!held || held.enrolled_at !== identity.enrolled_at)
    throw new AgentError('no_checkpoint', 'this node has not verified a tree checkpoint yet: it does after its next answer from a coordinator that sends one');
  const line = new Witness(dir.root, identity, () => now).cosigned(held).cosignature;
  if (!line) return { note: held.note, witness: null };
  return { note: `${held.note}${line}\n`, witness: line.split(' ')[1] };
}

export async function run(options: RunOptions): Promise<void> {
  const config = loadConfig(options);
  const dir = stateDirFor(options, config);
  if (options.checkpoint) {
    const { note, witness } = cosignedCheckpoint(dir, new Date());
    if (witness === null)
      process.stderr.write("warning: this node has no registered witness key yet: the checkpoint carries the coordinator's signature only\n");
    process.stdout.write(options.json ? `${JSON.stringify({ note, witness })}\n` : note);
    return;
  }
  const res = await callControlSocket(dir.socketPath, { op: 'status' }, 30_000);
  if (!res.ok || !res.status) throw new AgentError('bad_response', res.ok ? 'the agent answered without a status' : res.error);
  process.stdout.write(options.json ? `${JSON.stringify(res.status)}\n` : `${formatStatus(res.status)}\n`);
}
