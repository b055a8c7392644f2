import { setFlagsFromString } from 'node:v8';
import { givenFlags } from './node-flags.js';

/**
 * V8 runs a function in its interpreter first, compiles it to plain machine code once it has run a
 * few times (Sparkplug) and hands it to its optimizing compilers (Maglev, then Turbofan) once it is
 * hot. Start-up is hot for a moment: every module's top level, the framework's wiring, the migrations.
 * Compiling that code brought the compilers' own code in from the node binary and left their zones in
 * the allocator's arenas and their code in the heap, and an idle coordinator went on holding those
 * pages for code that never runs again (bench:rss; the figures are in bench/README.md). So start-up
 * runs in the interpreter alone, and once the coordinator listens the compilers are back: a request
 * path that gets hot is compiled and optimized as before. Start-up takes a little longer for it.
 *
 * On the embedded database `serve` lets them run before the database opens (cli.ts): there an idle
 * coordinator held more without them, not less. Left alone when the operator chose a tier on the
 * command line or in NODE_OPTIONS (`--no-maglev`, `--jitless`, …): their choice holds from start to end.
 */
const TIERS = ['turbofan', 'maglev', 'sparkplug'] as const;
/** Flags that choose the tiers, by name without `--` or `--no-` (`--opt` is V8's alias of `--turbofan`). */
const CHOOSING = new Set([...TIERS, 'opt', 'jitless', 'always-sparkplug']);

let held = false;

/** Whether the process was started with its own choice of tiers, as a node flag or in NODE_OPTIONS (V8 reads `_` as `-`). */
export function tiersChosen(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return givenFlags(execArgv, nodeOptions).some((name) => CHOOSING.has(name));
}

/** Holds the compilers off, unless the operator chose a tier. */
export function holdCompilerTiers(): void {
  if (held || tiersChosen(process.execArgv, process.env.NODE_OPTIONS)) return;
  for (const tier of TIERS) setFlagsFromString(`--no-${tier}`);
  held = true;
}

/** Lets the compilers run again (the coordinator listens, or runs a command that is not serve). */
export function letCompilerTiersRun(): void {
  if (!held) return;
  for (const tier of TIERS) setFlagsFromString(`--${tier}`);
  held = false;
}
