import { givenFlags } from './node-flags.js';

/**
 * V8 does its background work on a pool of worker threads, four by default (`--v8-pool-size`): the
 * garbage collector's concurrent and parallel phases, and compiling WebAssembly. On the embedded
 * database, start-up spreads the compiling of PostgreSQL's WebAssembly and the collections of
 * start-up over the four, and what each thread allocated and freed stays in its own arena of the
 * C library's allocator. An idle embedded coordinator held markedly less with one thread doing the
 * same work, and a publish took no longer (bench:rss; the figures are in bench/README.md).
 *
 * The pool is sized once, when the runtime starts. So `serve` on the embedded database starts the
 * runtime again, first thing, with `--v8-pool-size=1`: the same process (`process.execve`: the same
 * pid, arguments and environment, so a service manager sees nothing), before anything is loaded.
 * Left alone:
 * - on PostgreSQL, where a large fleet's publishes give the collector real work for its threads;
 * - when the operator sized the pool, on the command line or in NODE_OPTIONS;
 * - when a debugger was asked for (`--inspect…`): one attached to the first start would lose it;
 * - on a Node.js without `process.execve` (before 22.15).
 */
export const EMBEDDED_POOL_SIZE = 1;

/**
 * The arguments to start the runtime again with for a pool of one thread (`process.argv`'s form: the
 * runtime's path first), or undefined where the pool is left as it is (see above). `argv` and
 * `execArgv` are the process's own; the command is the first argument after the script, `serve` when
 * there is none.
 */
export function withOneWorkerThread(
  argv: readonly string[],
  execArgv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): string[] | undefined {
  const command = argv[2];
  if (command !== undefined && command !== 'serve') return undefined;
  // An empty DATABASE_URL is unset, as the configuration reads it (config.ts).
  if (env.DATABASE_URL) return undefined;
  const given = givenFlags(execArgv, env.NODE_OPTIONS);
  if (given.includes('v8-pool-size') || given.some((name) => name.startsWith('inspect'))) return undefined;
  return [argv[0], ...execArgv, `--v8-pool-size=${EMBEDDED_POOL_SIZE}`, ...argv.slice(1)];
}

/**
 * Starts the runtime again with a pool of one worker thread where `withOneWorkerThread` says so;
 * otherwise returns. A start again that fails (the runtime's file no longer executable, say) is said on
 * stderr and the coordinator goes on with the pool it has: it holds more memory, and serves the same.
 */
export function startWithOneWorkerThread(
  execve: typeof process.execve = process.execve?.bind(process),
  warn: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
): void {
  if (typeof execve !== 'function') return;
  const args = withOneWorkerThread(process.argv, process.execArgv, process.env);
  if (!args) return;
  try {
    execve(process.execPath, args, process.env);
  } catch (err) {
    warn(
      `coordinator: could not start the runtime again with one V8 worker thread (${err instanceof Error ? err.message : String(err)}); serving with the pool it has`,
    );
  }
}
