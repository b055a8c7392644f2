import { givenFlags } from './node-flags.js';

/**
 * Three settings of the runtime that an idle coordinator on the embedded database holds markedly less
 * memory with (bench:rss; the figures are in bench/README.md). All are read once, when the runtime
 * starts.
 *
 * - **One V8 worker thread** (`--v8-pool-size=1`; four by default). V8 does its background work on
 *   the pool: the garbage collector's concurrent and parallel phases, and compiling WebAssembly. On
 *   the embedded database, start-up spreads the compiling of PostgreSQL's WebAssembly and the
 *   collections of start-up over the four, and what each thread allocated and freed stays in its own
 *   arena of the C library's allocator.
 * - **V8's work done on the main thread** (`--single-threaded`): the collector's marking and
 *   sweeping, and the optimising compiler's work, which otherwise run beside it on the worker. What
 *   the worker allocated for them, in its own arena of the C library's allocator, stayed resident in
 *   an idle coordinator. A publish of thousands of nodes takes about a tenth longer, the first after
 *   start a sixth to a third (the optimising compiler's work on that publish's thread).
 * - **The C library allocator's mmap threshold at 32 KiB**
 *   (`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768`). A block that size or larger gets pages of
 *   its own, given back to the system when it is freed. By default the threshold rises to the size
 *   of any such block freed, and later blocks up to that size come from the arenas, where what
 *   start-up's compiling freed stayed resident (V8 compiles in working memory of segments of up
 *   to 32 KiB). A publish of thousands of nodes takes a tenth to a fifth longer (each such block is
 *   new pages from the system), and the coordinator holds far less after it. Only glibc reads the
 *   variable; another C library ignores it.
 *
 * So `serve` on the embedded database starts the runtime again, first thing, with all three: the same
 * process (`process.execve`: the same pid and arguments, so a service manager sees nothing), before
 * anything is loaded. The pool flag on the command line marks the second start, which goes on. Left
 * alone:
 * - on PostgreSQL, where a large fleet's publishes give the collector real work for its threads;
 * - when the operator sized the pool, on the command line or in NODE_OPTIONS: they tune the runtime
 *   themselves;
 * - when a debugger was asked for (`--inspect…`): one attached to the first start would lose it;
 * - on a Node.js without `process.execve` (before 22.15).
 * A GLIBC_TUNABLES the operator set is kept as it is.
 */
export const EMBEDDED_POOL_SIZE = 1;
export const EMBEDDED_V8_FLAGS = [`--v8-pool-size=${EMBEDDED_POOL_SIZE}`, '--single-threaded'] as const;
export const EMBEDDED_MALLOC_TUNABLES = 'glibc.malloc.mmap_threshold=32768';

/** What to start the runtime again with: `process.argv`'s form (the runtime's path first), and the environment. */
export interface EmbeddedRuntime {
  readonly args: string[];
  readonly env: Record<string, string | undefined>;
}

/**
 * The arguments and environment to start the runtime again with for the embedded database, or
 * undefined where it is left as it is (see above). `argv`, `execArgv` and `env` are the process's own;
 * the command is the first argument after the script, `serve` when there is none.
 */
export function embeddedRuntime(
  argv: readonly string[],
  execArgv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): EmbeddedRuntime | undefined {
  const command = argv[2];
  if (command !== undefined && command !== 'serve') return undefined;
  // An empty DATABASE_URL is unset, as the configuration reads it (config.ts).
  if (env.DATABASE_URL) return undefined;
  const given = givenFlags(execArgv, env.NODE_OPTIONS);
  if (given.includes('v8-pool-size') || given.some((name) => name.startsWith('inspect'))) return undefined;
  return {
    args: [argv[0], ...execArgv, ...EMBEDDED_V8_FLAGS, ...argv.slice(1)],
    env: env.GLIBC_TUNABLES === undefined ? { ...env, GLIBC_TUNABLES: EMBEDDED_MALLOC_TUNABLES } : { ...env },
  };
}

/**
 * Starts the runtime again with the embedded database's settings where `embeddedRuntime` says so;
 * otherwise returns. A start again that fails (the runtime's file no longer executable, say) is said on
 * stderr and the coordinator goes on as it is: it holds more memory, and serves the same.
 */
export function startEmbeddedRuntime(
  execve: typeof process.execve = process.execve?.bind(process),
  warn: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
): void {
  if (typeof execve !== 'function') return;
  const again = embeddedRuntime(process.argv, process.execArgv, process.env);
  if (!again) return;
  try {
    execve(process.execPath, again.args, again.env);
  } catch (err) {
    warn(
      `coordinator: could not start the runtime again with the embedded database's settings (${err instanceof Error ? err.message : String(err)}); serving as it is`,
    );
  }
}
