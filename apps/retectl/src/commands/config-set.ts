import { readFileSync } from 'node:fs';
import { checkUrl, configPath, readConfig, writeConfig } from '../config.js';
import { usageError } from '../errors.js';
import { out } from '../output.js';
import { checkKey } from './config-unset.js';

export interface ConfigSetOptions {
  readonly key: string;
  readonly value?: string;
}

/** Sets coordinator or token; a token given as `-` or omitted is read from stdin, out of shell history. */
export async function run(options: ConfigSetOptions): Promise<void> {
  const key = checkKey(options.key);
  let value = options.value;
  if (key === 'token' && (value === undefined || value === '-')) value = readFileSync(0, 'utf8').trim();
  if (value === undefined || value === '') throw usageError(`config set ${key} needs a value`);
  if (key === 'coordinator') value = checkUrl(value, 'coordinator');
  const path = configPath();
  writeConfig({ ...readConfig(path), [key]: value }, path);
  out(`${key} saved to ${path}`);
}
