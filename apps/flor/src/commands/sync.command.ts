import type { PlannedResource, SyncOutcome } from '#contracts';
import { loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { callControlSocket } from '../agent/control-socket.js';
import { AgentError } from '../errors.js';

/**
 * One line for people: `up to date at 7`, `applied 8 (was 7)`, `rejected 9: signature does not
 * verify`, and for a dry run `would apply 8 (active 7)`.
 */
export function describeOutcome(o: SyncOutcome): string {
  const v = o.version === null ? '' : ` ${o.version}`;
  switch (o.result) {
    case 'would_apply':
      return (
        (o.version === o.was ? `would apply ${o.version} again (active ${o.was}, its apply did not complete)` : `would apply ${o.version} (active ${o.was})`) +
        plannedLines(o.planned ?? [])
      );
    case 'up_to_date':
      return `up to date at ${o.active_version}`;
    case 'applied':
      return `applied ${o.active_version} (was ${o.was})`;
    case 'rejected':
      return `rejected${v}: ${o.reason}`;
    case 'failed':
      return `failed${v}: ${o.reason}`;
    case 'error':
      return `error: ${o.reason}`;
    case 'reverted':
      return `reverted to ${o.active_version}${v}: ${o.reason}`;
    default: {
      const never: never = o.result;
      return String(never);
    }
  }
}

/** A dry run's resource steps, one indented line each: `install package hello=1.1 (installed 1.0)`. */
export function plannedLines(planned: readonly PlannedResource[]): string {
  return planned
    .map((p) => {
      if (p.kind === 'file') return `\n  ${p.action.padEnd(9)} file ${p.path}`;
      const what = p.version === null ? p.name : `${p.name}=${p.version}`;
      const now = p.installed === null ? 'not installed' : `installed ${p.installed}`;
      const note = p.action === 'forget' ? ': there before the agent, left installed' : '';
      return `\n  ${p.action.padEnd(9)} package ${what} (${now})${note}`;
    })
    .join('');
}

/** Asks the daemon for a pass; true when it applied, was already up to date, or (a dry run) would apply. */
export type RunOptions = CommonOptions & { dryRun?: boolean; json?: boolean };

export async function run(options: RunOptions): Promise<boolean> {
  const config = loadConfig(options);
  const dir = stateDirFor(options, config);
  const res = await callControlSocket(dir.socketPath, { op: 'sync', dry_run: options.dryRun ?? false }, 15 * 60_000);
  if (!res.ok || !res.sync) throw new AgentError('bad_response', res.ok ? 'the agent answered without an outcome' : res.error);
  process.stdout.write(options.json ? `${JSON.stringify(res.sync)}\n` : `${describeOutcome(res.sync)}\n`);
  return res.sync.result === 'applied' || res.sync.result === 'up_to_date' || res.sync.result === 'would_apply';
}
