import { setFlagsFromString } from 'node:v8';
import { givenFlags } from './node-flags.js';

/**
 * The JavaScript heap's young generation (new space) doubles whenever enough of it survives a
 * collection. Start-up allocates fast (every module, the API schemas, the document of the API), so by
 * the time the coordinator listened its new space had grown to its largest, and stayed there until
 * V8 noticed the process was idle and shrank it, a while later: an idle coordinator held that memory
 * for nothing (bench:rss; the figures are in bench/README.md). So start-up runs with the young
 * generation held at its starting size, and once the coordinator listens it may grow again as the
 * work asks: the first large publish grows it in a few collections, as before. Start-up is no slower
 * for it. Left alone when the operator set the factor on the command line or in NODE_OPTIONS.
 *
 * Held by the command's entry point before it loads the other modules: compiling them allocates too.
 */
const V8_DEFAULT_GROWTH = 2;
const FLAG = '--semi-space-growth-factor';

let held = false;

/** Whether the process was started with its own growth factor, as a node flag or in NODE_OPTIONS (V8 reads `_` as `-`). */
export function growthChosen(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return givenFlags(execArgv, nodeOptions).includes(FLAG.slice(2));
}

/** Holds the young generation at its starting size, unless the operator chose the growth factor. */
export function holdYoungGeneration(): void {
  if (held || growthChosen(process.execArgv, process.env.NODE_OPTIONS)) return;
  setFlagsFromString(`${FLAG}=1`);
  held = true;
}

/** Lets the young generation grow again (the coordinator listens, or runs a command that is not serve). */
export function letYoungGenerationGrow(): void {
  if (!held) return;
  setFlagsFromString(`${FLAG}=${V8_DEFAULT_GROWTH}`);
  held = false;
}
