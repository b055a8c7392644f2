import { execFile } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** One piece of work for a short-lived child process: see runApart. */
export interface ApartWork<T> {
  /** The caller's `import.meta.url`: the script sits beside it. */
  readonly from: string;
  /** The script's path relative to the caller, as built (`./new-data-dir.js`); it calls runAsScript. */
  readonly script: string;
  /** The one argument the script is given. */
  readonly arg: string;
  /** The same work in this process, for a caller run from the TypeScript sources, where no built script sits beside it. */
  readonly here: () => Promise<T>;
  /** What a failure is about, before the child's own message: `the apt repository key /etc/…`. */
  readonly failure: string;
}

/**
 * Runs work in a short-lived child process (this runtime, the script beside the caller) and gives
 * what the script printed. Whatever the work loaded or allocated (a library, a database instance)
 * goes back to the system when the child exits, where in this process the runtime would hand it
 * back only at a later garbage collection, and code it compiled would stay. `NODE_OPTIONS` is
 * emptied so that a flag meant for the caller (a CPU profile, a loader) is not applied twice. A
 * failure says `failure: <the child's message>`; run from the TypeScript sources, `here` runs in this
 * process and fails the same way.
 */
export async function runApart<T>(work: ApartWork<T>): Promise<T> {
  if (work.from.endsWith('.ts')) {
    return work.here().catch((err: unknown) => {
      throw new Error(`${work.failure}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    });
  }
  const script = fileURLToPath(new URL(work.script, work.from));
  return new Promise((resolve, reject) => {
    const env = { ...process.env, NODE_OPTIONS: '' };
    execFile(process.execPath, [script, work.arg], { env, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${work.failure}: ${stderr.trim() || err.message}`, { cause: err }));
      else resolve(JSON.parse(stdout) as T);
    });
  });
}

/**
 * The other half of runApart, at the end of the script's module: when this module is the script
 * node was started with, runs `work` on its one argument and prints the result as one JSON line, or
 * the failure's message on stderr with exit status 1. Imported by any other module, it does nothing.
 * The path node was given may go through a symlink; the module's own path does not.
 */
export function runAsScript<T>(moduleUrl: string, work: (arg: string) => Promise<T>): void {
  const started = process.argv[1];
  if (started === undefined || realpathSync(started) !== fileURLToPath(moduleUrl)) return;
  work(process.argv[2] ?? '').then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
