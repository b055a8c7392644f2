import type { Behind, Unapplied } from '#contracts';

export interface BehindFacts {
  /** The version in effect: the last whose install and activation completed. */
  readonly appliedVersion: number;
  /** The `active` symlink: ahead of the applied version while an activation is pending or after it failed. */
  readonly activeVersion: number;
  /** What the last real passes saw and did not apply. */
  readonly unapplied: Unapplied | null;
  /** The coordinator's word that the node was retired, for this enrolment only. */
  readonly retired: { readonly version: number | null; readonly at: string } | null;
  /** What a dry run saw since the last real pass that reached the coordinator (the daemon's memory: a dry run writes nothing). */
  readonly dryRun: { readonly version: number; readonly at: string } | null;
}

/**
 * Whether a newer version than the one in effect was seen, and why it is not in effect. A retirement
 * the node never applied outranks everything: nothing more will come. Otherwise what a real pass
 * tried, unless a dry run since saw something newer still.
 */
export function behindOf(f: BehindFacts): Behind | null {
  const running = f.appliedVersion;
  if (f.retired && f.retired.version !== null && f.retired.version > running) {
    return {
      seen_version: f.retired.version,
      active_version: running,
      reason: 'retired',
      detail: 'the coordinator retired the node at a version this agent never applied',
      seen_at: f.retired.at,
    };
  }
  let real: Behind | null = null;
  const u = f.unapplied;
  if (u && (u.version === null || u.version > running)) {
    real = { seen_version: u.version, active_version: running, reason: u.reason, detail: u.detail, seen_at: u.at };
  } else if (f.activeVersion > running) {
    real = {
      seen_version: f.activeVersion,
      active_version: running,
      reason: 'pending',
      detail: 'switched to, activation not completed: the next pass finishes it',
      seen_at: null,
    };
  }
  const dry = f.dryRun;
  if (dry && dry.version > running && dry.version > (real?.seen_version ?? 0)) {
    return { seen_version: dry.version, active_version: running, reason: 'dry_run', detail: null, seen_at: dry.at };
  }
  return real;
}
