import { setFlagsFromString } from 'node:v8';

/**
 * V8 runs a function in its interpreter first and hands it to its optimizing compilers (Maglev, then
 * Turbofan) once it is hot. Start-up is hot for a moment: every module's top level, the framework's
 * wiring, the migrations. Optimizing that code brought the compilers' own code in from the node binary
 * and left their zones in the allocator's arenas, and an idle coordinator went on holding those pages
 * for code that never runs again (bench:rss; the figures are in bench/README.md). So start-up runs
 * without the optimizing tiers, and once the coordinator listens they are back: a request path that
 * gets hot under load is optimized as before. The interpreter and the baseline compiler (Sparkplug)
 * run throughout. Start-up takes no longer for it.
 *
 * On the embedded database `serve` lets them run before the database opens (cli.ts): there an idle
 * coordinator held more without them, not less. Left alone when the operator chose a tier on the
 * command line or in NODE_OPTIONS (`--no-maglev`, `--jitless`, …): their choice holds from start to end.
 */
const TIERS = ['turbofan', 'maglev'] as const;
/** Flags that choose the optimizing tiers, by name without `--` or `--no-` (`--opt` is V8's alias of `--turbofan`). */
const CHOOSING = new Set([...TIERS, 'opt', 'jitless']);

let held = false;

/** Whether the process was started with its own choice of tiers, as a node flag or in NODE_OPTIONS (V8 reads `_` as `-`). */
export function tiersChosen(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) => {
    const name = /^--(?:no-)?([a-z_-]+)(?:=|$)/.exec(arg.replace(/_/g, '-'))?.[1];
    return name !== undefined && CHOOSING.has(name);
  });
}

/** Holds the optimizing tiers off, unless the operator chose them. */
export function holdOptimizingTiers(): void {
  if (held || tiersChosen(process.execArgv, process.env.NODE_OPTIONS)) return;
  for (const tier of TIERS) setFlagsFromString(`--no-${tier}`);
  held = true;
}

/** Lets the optimizing tiers run again (the coordinator listens, or runs a command that is not serve). */
export function letOptimizingTiersRun(): void {
  if (!held) return;
  for (const tier of TIERS) setFlagsFromString(`--${tier}`);
  held = false;
}
