import { readFileSync } from 'node:fs';
import { checkUrl, configPath, readConfig, writeConfig } from '../config.js';
import { usageError } from '../errors.js';
import { out, outJson } from '../output.js';

export interface ConfigSetOptions {
  readonly key: string;
  readonly value?: string;
}

const KEYS = ['coordinator', 'token'] as const;

/** Sets coordinator or token; a token given as `-` or omitted is read from stdin, out of shell history. */
export async function set(options: ConfigSetOptions): Promise<void> {
  if (!(KEYS as readonly string[]).includes(options.key)) throw usageError(`unknown config key ${JSON.stringify(options.key)}: expected coordinator or token`);
  let value = options.value;
  if (options.key === 'token' && (value === undefined || value === '-')) value = readFileSync(0, 'utf8').trim();
  if (value === undefined || value === '') throw usageError(`config set ${options.key} needs a value`);
  if (options.key === 'coordinator') value = checkUrl(value, 'coordinator');
  const path = configPath();
  writeConfig({ ...readConfig(path), [options.key]: value }, path);
  out(`${options.key} saved to ${path}`);
}

export async function unset(options: { readonly key: string }): Promise<void> {
  if (!(KEYS as readonly string[]).includes(options.key)) throw usageError(`unknown config key ${JSON.stringify(options.key)}: expected coordinator or token`);
  const path = configPath();
  const config = { ...readConfig(path) };
  delete config[options.key as (typeof KEYS)[number]];
  writeConfig(config, path);
  out(`${options.key} removed from ${path}`);
}

/** Shows the config without the token's value: only whether one is set. */
export async function show(options: { readonly json?: boolean }): Promise<void> {
  const path = configPath();
  const config = readConfig(path);
  const view = { path, coordinator: config.coordinator ?? null, token: config.token ? 'set' : 'not set' };
  if (options.json) return outJson(view);
  out(`config file: ${view.path}\ncoordinator: ${view.coordinator ?? '(not set)'}\ntoken: ${view.token}`);
}
