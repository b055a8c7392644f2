import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { AgentConfig } from '#contracts';
import { AgentError } from '../errors.js';
import { DEFAULT_STATE_DIR, StateDir } from './state-dir.js';

export const DEFAULT_CONFIG_PATH = '/etc/florete/agent.yaml';

export interface CommonOptions {
  readonly config?: string;
  readonly stateDir?: string;
}

/**
 * The local config: --config, else $FLORETE_AGENT_CONFIG, else /etc/florete/agent.yaml when it
 * exists, else the defaults. YAML or JSON (JSON is YAML).
 */
export function loadConfig(options: CommonOptions): AgentConfig {
  const path = configPathFor(options);
  if (!path) return AgentConfig.parse({});
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8')) ?? {};
  } catch (err) {
    throw new AgentError('bad_config', `cannot read the agent config ${path}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = AgentConfig.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new AgentError('bad_config', `${path}: ${issues}`);
  }
  return parsed.data;
}

/** The config file loadConfig reads, if any. */
export function configPathFor(options: CommonOptions): string | undefined {
  return options.config ?? process.env.FLORETE_AGENT_CONFIG ?? (existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined);
}

/** --state-dir, else $FLORETE_AGENT_STATE_DIR, else the config's state_dir, else /var/lib/florete/agent. */
export function stateDirFor(options: CommonOptions, config: AgentConfig): StateDir {
  return new StateDir(options.stateDir ?? process.env.FLORETE_AGENT_STATE_DIR ?? config.state_dir ?? DEFAULT_STATE_DIR);
}
