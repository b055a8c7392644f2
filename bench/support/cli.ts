import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './cleanup.js';

/** parseArgs with strict options; an unknown or malformed option becomes a UsageError (exit 2). */
export function parseCli<T extends NonNullable<ParseArgsConfig['options']>>(options: T) {
  try {
    return parseArgs({ options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}
