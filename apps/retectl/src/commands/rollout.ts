import { RolloutListResponse, RolloutView, type RolloutAction, type RolloutStatus } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { RetectlError } from '../errors.js';
import { liveLine, type LineStream } from '../live-line.js';
import { out, outJson, plural } from '../output.js';

export interface RolloutOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** `retectl rollout list`: rollouts, newest first. */
export async function list(options: RolloutOptions & { readonly status?: RolloutStatus }): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', `/v1/rollouts${options.status ? `?status=${options.status}` : ''}`, RolloutListResponse);
  if (options.json) return outJson(body);
  if (body.rollouts.length === 0) return out('no rollouts');
  for (const r of body.rollouts)
    out(`${r.id.slice(0, 8)}  ${r.status.padEnd(10)} wave ${r.released}/${r.waves}  ${plural(r.nodes, 'node')}  ${r.created_at}  ${r.message}`);
}

/** The id to show: the one given, else the newest running or paused, else the newest. */
async function pick(client: CoordinatorClient, id: string | undefined): Promise<string> {
  if (id) return id;
  const { body } = await client.call('GET', '/v1/rollouts?limit=50', RolloutListResponse);
  const chosen = body.rollouts.find((r) => r.status === 'running' || r.status === 'paused') ?? body.rollouts[0];
  if (!chosen) throw new RetectlError('not_found', 'no rollouts yet: publish with --canary or --waves to start one');
  return chosen.id;
}

/** Lines that show a rollout: its state, each wave's counts, and its timeline. */
export function formatRollout(r: RolloutView): string {
  const lines = [
    `rollout ${r.id} (${r.status}${r.reason ? `: ${r.reason}` : ''})`,
    `  ${r.message}`,
    `  by ${r.actor} at ${r.created_at}; ${plural(r.nodes, 'node')} in ${plural(r.waves, 'wave')}, ${r.released} released`,
  ];
  for (const w of r.wave_list) {
    const c = w.counts;
    const when = w.released_at ? `released ${w.released_at}` : 'not released';
    lines.push(
      `  ${w.name.padEnd(8)} ${plural(c.nodes, 'node').padStart(11)}  ${when}${w.released_at ? `: ${c.confirmed} confirmed, ${c.provisional} provisional, ${c.outstanding} outstanding, ${c.failed} failed${c.expired > 0 ? `, ${c.expired} unconfirmed and given their previous sets` : ''}` : ''}`,
    );
  }
  lines.push('  timeline:');
  for (const e of r.timeline)
    lines.push(
      `    ${e.recorded_at}  ${e.type.replace(/^rollout_/, '')}${e.wave !== undefined ? ` ${e.wave}` : ''} ${e.nodes !== undefined ? ` (${plural(e.nodes, 'node')})` : ''} by ${e.actor}${e.reason ? `: ${e.reason}` : ''}`,
    );
  return lines.join('\n');
}

const FINISHED: readonly RolloutStatus[] = ['completed', 'halted', 'aborted', 'superseded'];
/** The exit code a finished rollout gives: 0 completed, 1 halted or aborted, 0 superseded (another took over). */
export const exitOf = (status: RolloutStatus): number => (status === 'halted' || status === 'aborted' ? 1 : 0);

/**
 * What a watched rollout says at a glance: its state, the current wave, and each released wave's
 * counts (`running wave 2/3: canary 1/1 confirmed; wave 1 3/5 confirmed, 1 provisional, 1 outstanding`).
 */
export function watchLine(view: RolloutView): string {
  const waves = view.wave_list
    .filter((w) => w.released_at)
    .map((w) => {
      const c = w.counts;
      const rest = [
        [c.provisional, 'provisional'],
        [c.outstanding, 'outstanding'],
        [c.failed, 'failed'],
        [c.expired, 'unconfirmed'],
      ] as const;
      return `${w.name} ${c.confirmed}/${c.released} confirmed${rest
        .filter(([n]) => n > 0)
        .map(([n, word]) => `, ${n} ${word}`)
        .join('')}`;
    });
  return `${view.status} wave ${view.released}/${view.waves}${waves.length > 0 ? `: ${waves.join('; ')}` : ''}`;
}

/**
 * `retectl rollout status [ID]`: the rollout's waves and timeline; with --watch, its watchLine live
 * until it finishes (rewritten in place on a terminal, a line per change otherwise), then the whole
 * rollout (exit 0 completed, 1 halted or aborted, 4 at the timeout).
 */
export async function status(
  options: RolloutOptions & {
    readonly id?: string;
    readonly watch?: boolean;
    readonly timeoutSeconds?: number;
    readonly intervalMs?: number;
    readonly stream?: LineStream;
  },
): Promise<number> {
  const client = new CoordinatorClient(resolveConnection(options));
  const id = await pick(client, options.id);
  const read = async () => (await client.call('GET', `/v1/rollouts/${encodeURIComponent(id)}`, RolloutView)).body;
  let view = await read();
  if (!options.watch) {
    if (options.json) outJson(view);
    else out(formatRollout(view));
    return 0;
  }
  const started = Date.now();
  const deadline = started + (options.timeoutSeconds ?? 3600) * 1000;
  const live = liveLine(options.stream);
  for (;;) {
    if (!options.json) {
      const state = watchLine(view);
      live.update(`${Math.floor((Date.now() - started) / 1000)}s: ${state}`, state);
    }
    if (FINISHED.includes(view.status)) break;
    if (Date.now() >= deadline) {
      live.done();
      if (options.json) outJson({ ...view, timed_out: true });
      else out(`timed out: rollout ${view.id.slice(0, 8)} is ${view.status}`);
      return 4;
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 1000));
    view = await read();
  }
  live.done();
  if (options.json) outJson(view);
  else out(formatRollout(view));
  return exitOf(view.status);
}

/** `retectl rollout pause|resume|promote|abort ID`: the action, recorded with who, and the rollout after it. */
export async function act(options: RolloutOptions & { readonly id: string; readonly action: RolloutAction; readonly message?: string }): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('POST', `/v1/rollouts/${encodeURIComponent(options.id)}/${options.action}`, RolloutView, {
    json: options.message ? { message: options.message } : {},
  });
  if (options.json) return outJson(body);
  out(formatRollout(body));
}
