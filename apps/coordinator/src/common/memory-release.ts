import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Gives the heap's pages back once large work is over. A publish of thousands of nodes (and the
 * mirror following it) grows the JavaScript heap to several times what an idle coordinator keeps
 * alive, and V8 kept the pages: 30 s after a 10,000-node publish the process held about 330 MiB
 * where a collection that reduces memory leaves about 210 MiB (bench:rss, bench/README.md). So work
 * that large asks for that collection, and it runs once the work has been over for QUIET_MS: one
 * full collection, a few tens of milliseconds of the event loop, after a publish that took seconds.
 */
const QUIET_MS = 10_000;
/** Nodes (or objects) a piece of work must touch to be worth it: an everyday publish is a few. */
export const LARGE_WORK = 1_000;

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: Collect | null | undefined;
let timer: NodeJS.Timeout | undefined;
let released = 0;

/** V8's gc(), without starting node with --expose-gc: the flag set now holds for contexts made after it. */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    collect = typeof gc === 'function' ? (gc as Collect) : null;
  } catch {
    collect = null;
  }
  return collect;
}

/** After large work: a collection that gives memory back, once no large work has come for QUIET_MS. */
export function releaseMemorySoon(quietMs = QUIET_MS): void {
  clearTimeout(timer);
  timer = setTimeout(() => {
    timer = undefined;
    const gc = collector();
    if (!gc) return;
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    released += 1;
  }, quietMs);
  timer.unref();
}

/** How many times memory was given back (the tests read it). */
export function memoryReleases(): number {
  return released;
}
