import { statSync } from 'node:fs';
import { configPathFor, loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import type { StateSummary } from '../agent/state-dir.js';
import { AgentError } from '../errors.js';
import { AGENT_VERSION } from '../version.js';

export type RunOptions = CommonOptions & { json?: boolean };

export interface SelfCheck {
  readonly version: string;
  readonly runtime: string;
  /** null: no config file, the defaults. */
  readonly config: string | null;
  readonly state_dir: string;
  /** null: the state dir does not exist yet (the agent creates it when it first runs). */
  readonly state: StateSummary | null;
}

function describeState(s: StateSummary | null): string {
  if (s === null) return 'none yet (the agent creates it when it first runs)';
  const who = s.node === null ? 'not enrolled' : `enrolled as ${s.node} with ${s.coordinator}`;
  return `ok: ${who}, active version ${s.active_version}, applied ${s.applied_version}, high-water mark ${s.high_water}, staged ${s.staged_versions.join(', ') || '-'}, ${s.installed_files} installed file(s), ${s.owned_files} file resource(s)`;
}

/**
 * `flor self-check`: this program's version, then its config and state dir loaded the way the
 * daemon loads them, writing nothing. A newly installed agent runs it once before the running one
 * hands over: a version that cannot read this node's config or state fails here, not in its first pass.
 */
export function run(options: RunOptions): void {
  if (!options.json) process.stdout.write(`flor ${AGENT_VERSION} (node ${process.version})\n`);
  let check: SelfCheck;
  try {
    const config = loadConfig(options);
    const dir = stateDirFor(options, config);
    let exists = true;
    try {
      if (!statSync(dir.root).isDirectory()) throw new AgentError('bad_state', `state dir ${dir.root} is not a directory`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw err instanceof AgentError ? err : new AgentError('bad_state', `state dir ${dir.root}: ${(err as Error).message}`, { cause: err });
      exists = false;
    }
    check = {
      version: AGENT_VERSION,
      runtime: process.version,
      config: configPathFor(options) ?? null,
      state_dir: dir.root,
      state: exists ? dir.load() : null,
    };
  } catch (err) {
    if (err instanceof AgentError) throw new AgentError(err.code, `self-check failed: ${err.message}`, { cause: err });
    throw err;
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(check)}\n`);
    return;
  }
  process.stdout.write(`config     ${check.config ?? '(no file: the defaults)'}: ok\nstate dir  ${check.state_dir}: ${describeState(check.state)}\n`);
}
