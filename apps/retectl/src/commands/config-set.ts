import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CaFileError, readCaFile } from '#tls';
import type { RetectlConfig } from '#contracts';
import { checkUrl, configPath, readConfig, writeConfig } from '../config.js';
import { usageError } from '../errors.js';
import { out } from '../output.js';
import { checkKey } from './config-unset.js';

export interface ConfigSetOptions {
  readonly key: string;
  readonly value?: string;
}

/** Sets a key; a token given as `-` or omitted is read from stdin, out of shell history. */
export async function run(options: ConfigSetOptions): Promise<void> {
  const key = checkKey(options.key);
  let value = options.value;
  if (key === 'token' && (value === undefined || value === '-')) value = readFileSync(0, 'utf8').trim();
  if (value === undefined || value === '') throw usageError(`config set ${key} needs a value`);
  const path = configPath();
  writeConfig({ ...readConfig(path), ...entry(key, value) }, path);
  out(`${key} saved to ${path}`);
}

/** The value as the file keeps it, checked now rather than at the next command. */
function entry(key: ReturnType<typeof checkKey>, value: string): RetectlConfig {
  switch (key) {
    case 'coordinator':
      return { coordinator: checkUrl(value, 'coordinator') };
    case 'token':
      return { token: value };
    case 'ca_file': {
      // Absolute, so it means the same file from any folder; read now, so a typo is caught here.
      const file = resolve(value);
      try {
        readCaFile(file, 'ca_file');
      } catch (err) {
        if (err instanceof CaFileError) throw usageError(err.message);
        throw err;
      }
      return { ca_file: file };
    }
    case 'insecure_http':
      if (value !== 'true' && value !== 'false') throw usageError(`insecure_http is true or false, not ${JSON.stringify(value)}`);
      return { insecure_http: value === 'true' };
  }
}
