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

/** `--sizes` (node counts, comma-separated) and `--repeat` (rounds), checked: what the fleet-size benchmarks take. */
export function sizesAndRepeat(defaultSizes: string, defaultRepeat = '3'): { sizes: number[]; repeat: number } {
  const { values } = parseCli({ sizes: { type: 'string', default: defaultSizes }, repeat: { type: 'string', default: defaultRepeat } });
  const sizes = values.sizes.split(',').map(Number);
  const repeat = Number(values.repeat);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new UsageError(`--sizes takes node counts, e.g. ${defaultSizes}`);
  if (!Number.isInteger(repeat) || repeat < 1) throw new UsageError('--repeat takes a whole number of rounds');
  return { sizes, repeat };
}
