import type { ActivationRecord, AgentStatus, Behind, BehindReason } from '#contracts';
import { loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { callControlSocket } from '../agent/control-socket.js';
import { AgentError } from '../errors.js';
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
  const how = a.answer ? `${a.activation} (${a.answer})` : a.fallback ? `${a.activation} (hot reload not applied: ${a.fallback.code}: ${a.fallback.reason})` : a.activation;
  return `${a.version}: ${how} at ${a.at}`;
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
    ...(s.retired ? [['retired', `${s.retired.version === null ? '' : `at version ${s.retired.version} `}since ${s.retired.at}: ${WAYS_ON}`] as [string, string]] : []),
    ['node', s.node ?? '-'],
    ['coordinator', s.coordinator ?? '-'],
    ['active version', s.local_set && s.active_version === 0 ? '0 (local set)' : String(s.active_version)],
    ['applied version', s.local_set ? `local set ${s.local_set.set_digest}` : String(s.applied_version)],
    ...(s.local_set ? [['local set', `node ${s.local_set.node}, from ${s.local_set.source}, applied at ${s.local_set.applied_at}`] as [string, string]] : []),
    ['staged versions', s.staged_versions.join(', ') || '-'],
    ['high-water mark', String(s.high_water)],
    ['behind', formatBehind(s.behind)],
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

export type RunOptions = CommonOptions & { json?: boolean };

export async function run(options: RunOptions): Promise<void> {
  const config = loadConfig(options);
  const dir = stateDirFor(options, config);
  const res = await callControlSocket(dir.socketPath, { op: 'status' }, 30_000);
  if (!res.ok || !res.status) throw new AgentError('bad_response', res.ok ? 'the agent answered without a status' : res.error);
  process.stdout.write(options.json ? `${JSON.stringify(res.status)}\n` : `${formatStatus(res.status)}\n`);
}
