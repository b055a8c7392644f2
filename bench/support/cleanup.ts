/**
 * Cleanup that runs however the benchmark ends: normal return, thrown error, SIGINT/SIGTERM, or an
 * uncaught exception (the synchronous fallbacks run from the 'exit' event).
 */
type AsyncCleanup = () => void | Promise<void>;
type SyncCleanup = () => void;

const stack: { run: AsyncCleanup; sync?: SyncCleanup; done: boolean }[] = [];

/** Registers a cleanup; `sync` is a last-resort synchronous version for when the process is already exiting. */
export function onCleanup(run: AsyncCleanup, sync?: SyncCleanup): void {
  stack.push({ run, sync, done: false });
}

export async function cleanupAll(): Promise<void> {
  while (stack.length) {
    const entry = stack.pop()!;
    if (entry.done) continue;
    entry.done = true;
    try {
      await entry.run();
    } catch (err) {
      process.stderr.write(`cleanup failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

function cleanupSync(): void {
  while (stack.length) {
    const entry = stack.pop()!;
    if (entry.done || !entry.sync) continue;
    entry.done = true;
    try {
      entry.sync();
    } catch {
      /* best effort while exiting */
    }
  }
}

/** A bad command-line argument: reported without a stack, exit code 2. */
export class UsageError extends Error {}

/** Runs a benchmark's main function and exits: 0 on success (unless exitCode was set), 1 on error, 2 on a usage error, 130 on a signal. */
export function runBench(name: string, main: () => Promise<void>): void {
  let finishing = false;
  const finish = async (code: number) => {
    if (finishing) return;
    finishing = true;
    await cleanupAll();
    process.exit(code);
  };
  process.on('exit', cleanupSync);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${name}: ${signal}, cleaning up\n`);
      void finish(130);
    });
  }
  main().then(
    () => finish(typeof process.exitCode === 'number' ? process.exitCode : 0),
    (err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`${name}: ${err.message}\n`);
        return finish(2);
      }
      process.stderr.write(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      return finish(1);
    },
  );
}
