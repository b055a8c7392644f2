import { configPath, readConfig, writeConfig } from '../config.js';
import { usageError } from '../errors.js';
import { out } from '../output.js';

/** The keys retectl's config file holds. */
const KEYS = ['coordinator', 'token', 'ca_file', 'insecure_http'] as const;
export const checkKey = (key: string): (typeof KEYS)[number] => {
  if (!(KEYS as readonly string[]).includes(key))
    throw usageError(`unknown config key ${JSON.stringify(key)}: expected coordinator, token, ca_file or insecure_http`);
  return key as (typeof KEYS)[number];
};

export async function run(options: { readonly key: string }): Promise<void> {
  const key = checkKey(options.key);
  const path = configPath();
  const config = { ...readConfig(path) };
  delete config[key];
  writeConfig(config, path);
  out(`${key} removed from ${path}`);
}
