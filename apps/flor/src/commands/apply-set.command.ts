import { resolve } from 'node:path';
import { NodeName, type ApplySetOutcome } from '#contracts';
import { loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { callControlSocket } from '../agent/control-socket.js';
import { AgentError, UsageError } from '../errors.js';

/**
 * One line for people: `applied local set 3f2a… (node first) from /root/first-set:
 * 3 resources, activation restart`, `local set 3f2a… (node first) is already in effect: nothing to do`,
 * `refused: …`, `failed: …`.
 */
export function describeApplySet(o: ApplySetOutcome): string {
  const set = o.set_digest ? `local set ${o.set_digest} (node ${o.node})` : 'local set';
  switch (o.result) {
    case 'applied': {
      const resources = o.resources?.length ?? 0;
      return `applied ${set} from ${o.source}: ${resources} resource${resources === 1 ? '' : 's'}, activation ${o.activation ?? 'none'}`;
    }
    case 'unchanged':
      return `${set} is already in effect: nothing to do`;
    case 'refused':
      return `refused: ${o.reason} (nothing was changed)`;
    case 'failed':
      return `failed ${set}: ${o.reason}`;
    default: {
      const never: never = o.result;
      return String(never);
    }
  }
}

export type RunOptions = CommonOptions & { set: string; node?: string; json?: boolean };

/** Asks the daemon to apply a compiled node folder; true when it applied it or it already was in effect. */
export async function run(options: RunOptions): Promise<boolean> {
  if (options.node !== undefined && !NodeName.safeParse(options.node).success) throw new UsageError(`--node ${options.node} is not a node name (a DNS label)`);
  if (options.set.trim() === '') throw new UsageError('--set needs the compiled node folder, as retectl compiled <node> --out <dir> writes it');
  const config = loadConfig(options);
  const dir = stateDirFor(options, config);
  // The daemon's working directory is not the operator's: it gets the absolute path.
  const request = { op: 'apply_set' as const, dir: resolve(options.set), ...(options.node !== undefined ? { node: options.node } : {}) };
  const res = await callControlSocket(dir.socketPath, request, 15 * 60_000);
  if (!res.ok || !res.apply_set) throw new AgentError('bad_response', res.ok ? 'the agent answered without an outcome' : res.error);
  const outcome = res.apply_set;
  if (options.json) process.stdout.write(`${JSON.stringify(outcome)}\n`);
  else if (outcome.result === 'applied' || outcome.result === 'unchanged') process.stdout.write(`${describeApplySet(outcome)}\n`);
  else process.stderr.write(`flor: ${describeApplySet(outcome)}\n`);
  return outcome.result === 'applied' || outcome.result === 'unchanged';
}
