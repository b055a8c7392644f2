import { parseDuration, RolloutListResponse, RolloutView, type RolloutAction, type RolloutPlanInput, type RolloutStatus } from '#contracts';
import type { Rete } from '#rete';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { RetectlError } from '../errors.js';
import { liveLine, type LineStream } from '../live-line.js';
import { out, outJson, plural } from '../output.js';

/** The flags of `retectl publish` that make it a rollout, as commander hands them over. */
export interface RolloutFlags {
  readonly canary?: string;
  readonly waves?: string;
  readonly bake?: string;
  readonly failureBudget?: string;
  readonly confirmShare?: string;
  readonly onHalt?: string;
}

const usage = (message: string) => new RetectlError('usage', message);

/** `10%`, `0.1` or `10` (percent when above 1) as a share from 0 to 1. */
function share(flag: string, value: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(%?)$/.exec(value.trim());
  if (!m) throw usage(`${flag} ${value}: expected a share such as 90% or 0.9`);
  const n = Number(m[1]);
  const s = m[2] === '%' || n > 1 ? n / 100 : n;
  if (s < 0 || s > 1) throw usage(`${flag} ${value}: a share is from 0% to 100%`);
  return s;
}

/**
 * The nodes a `--canary` selector names in the rete: `tag:a,b` (nodes carrying any of the tags),
 * `group:a,b` (their members), or node names (`node:a,b` or just `a,b`). An unknown name is an error.
 */
export function resolveCanary(rete: Pick<Rete, 'nodes' | 'groups'>, selector: string): string[] {
  const [kind, list] = selector.includes(':') ? (selector.split(/:(.*)/s, 2) as [string, string]) : ['node', selector];
  const names = list.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (names.length === 0) throw usage(`--canary ${selector}: name at least one ${kind}`);
  const picked = new Set<string>();
  for (const name of names) {
    if (kind === 'tag') {
      const carriers = rete.nodes.filter((n) => n.tags.includes(name));
      if (carriers.length === 0) throw usage(`--canary ${selector}: no node carries the tag "${name}"`);
      for (const n of carriers) picked.add(n.name);
    } else if (kind === 'group') {
      const members = rete.groups.get(name);
      if (!members) throw usage(`--canary ${selector}: no group is named "${name}"`);
      for (const m of members) picked.add(m);
    } else if (kind === 'node') {
      if (!rete.nodes.some((n) => n.name === name)) throw usage(`--canary ${selector}: no node is named "${name}"`);
      picked.add(name);
    } else throw usage(`--canary ${selector}: expected tag:NAMES, group:NAMES or node names`);
  }
  return [...picked].sort();
}

/** The rollout plan the flags ask for, or undefined when none of them is given (a publish all at once). */
export function rolloutPlanOf(rete: Pick<Rete, 'nodes' | 'groups'>, f: RolloutFlags): RolloutPlanInput | undefined {
  if ([f.canary, f.waves, f.bake, f.failureBudget, f.confirmShare, f.onHalt].every((v) => v === undefined)) return undefined;
  const plan: { -readonly [K in keyof RolloutPlanInput]: RolloutPlanInput[K] } = {};
  if (f.canary !== undefined) plan.canary = resolveCanary(rete, f.canary);
  if (f.waves !== undefined) {
    const waves = f.waves.split(',').map((w) => Number(w.trim().replace(/%$/, '')));
    if (waves.some((w) => !Number.isInteger(w) || w < 1 || w > 100)) throw usage(`--waves ${f.waves}: expected cumulative percentages such as 10,50,100`);
    if (waves.some((w, i) => i > 0 && w <= waves[i - 1])) throw usage(`--waves ${f.waves}: the percentages must increase`);
    if (waves[waves.length - 1] !== 100) waves.push(100);
    plan.waves = waves;
  }
  if (f.bake !== undefined) {
    const seconds = parseDuration(f.bake);
    if (seconds === undefined) throw usage(`--bake ${f.bake}: expected a duration such as 90s, 10m or 1h`);
    plan.bake_seconds = seconds;
  }
  if (f.failureBudget !== undefined) {
    plan.failure_budget = /%$|\./.test(f.failureBudget) ? { share: share('--failure-budget', f.failureBudget) } : { count: integer('--failure-budget', f.failureBudget) };
  }
  if (f.confirmShare !== undefined) plan.confirm_share = share('--confirm-share', f.confirmShare);
  if (f.onHalt !== undefined) {
    if (f.onHalt !== 'rollback' && f.onHalt !== 'hold') throw usage(`--on-halt ${f.onHalt}: expected rollback or hold`);
    plan.on_halt = f.onHalt;
  }
  return plan;
}

function integer(flag: string, value: string): number {
  if (!/^[0-9]{1,9}$/.test(value)) throw usage(`${flag} ${value}: expected a count such as 2, or a share such as 5%`);
  return Number(value);
}

export interface RolloutOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** `retectl rollout list`: rollouts, newest first. */
export async function list(options: RolloutOptions & { readonly status?: RolloutStatus }): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', `/v1/rollouts${options.status ? `?status=${options.status}` : ''}`, RolloutListResponse);
  if (options.json) return outJson(body);
  if (body.rollouts.length === 0) return out('no rollouts');
  for (const r of body.rollouts) out(`${r.id.slice(0, 8)}  ${r.status.padEnd(10)} wave ${r.released}/${r.waves}  ${plural(r.nodes, 'node')}  ${r.created_at}  ${r.message}`);
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
  const lines = [`rollout ${r.id} (${r.status}${r.reason ? `: ${r.reason}` : ''})`, `  ${r.message}`, `  by ${r.actor} at ${r.created_at}; ${plural(r.nodes, 'node')} in ${plural(r.waves, 'wave')}, ${r.released} released`];
  for (const w of r.wave_list) {
    const c = w.counts;
    const when = w.released_at ? `released ${w.released_at}` : 'not released';
    lines.push(`  ${w.name.padEnd(8)} ${plural(c.nodes, 'node').padStart(11)}  ${when}${w.released_at ? `: ${c.confirmed} confirmed, ${c.provisional} provisional, ${c.outstanding} outstanding, ${c.failed} failed${c.expired > 0 ? `, ${c.expired} unconfirmed and given their previous sets` : ''}` : ''}`);
  }
  lines.push('  timeline:');
  for (const e of r.timeline) lines.push(`    ${e.recorded_at}  ${e.type.replace(/^rollout_/, '')}${e.wave !== undefined ? ` ${e.wave}` : ''} ${e.nodes !== undefined ? ` (${plural(e.nodes, 'node')})` : ''} by ${e.actor}${e.reason ? `: ${e.reason}` : ''}`);
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
export async function status(options: RolloutOptions & { readonly id?: string; readonly watch?: boolean; readonly timeoutSeconds?: number; readonly intervalMs?: number; readonly stream?: LineStream }): Promise<number> {
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
  const { body } = await client.call('POST', `/v1/rollouts/${encodeURIComponent(options.id)}/${options.action}`, RolloutView, { json: options.message ? { message: options.message } : {} });
  if (options.json) return outJson(body);
  out(formatRollout(body));
}
