import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Gives the heap's pages back once large work is over. A publish of thousands of nodes (and the
 * mirror following it) grows the JavaScript heap to several times what an idle coordinator keeps
 * alive, and V8 keeps the pages; a collection that reduces memory gives most of them back (bench:rss
 * in bench/README.md). So work that large asks for that collection, and it runs once the work has
 * been over for QUIET_MS: one full collection, which stops the event loop for a moment that grows
 * with what is still alive, after work that took seconds.
 */
const QUIET_MS = 10_000;
/** Nodes (or objects) a piece of work must touch to be worth it: an everyday publish is a few. */
export const LARGE_WORK = 1_000;

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: Collect | null | undefined;
let timer: NodeJS.Timeout | undefined;
let released = 0;
/** Large work begun and not yet over (largeWorkBegun). */
let underWay = 0;
/** A collection came due while work was under way, and runs once that work is over. */
let deferred = false;

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

/** After large work: a collection that gives memory back, once no large work has come for QUIET_MS and none is under way. */
export function releaseMemorySoon(quietMs = QUIET_MS): void {
  clearTimeout(timer);
  timer = setTimeout(() => {
    timer = undefined;
    // Work under way: its end asks again.
    if (underWay > 0) {
      deferred = true;
      return;
    }
    deferred = false;
    const gc = collector();
    if (!gc) return;
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    released += 1;
  }, quietMs);
  timer.unref();
}

/**
 * Large work begun (a publish of thousands of nodes, the mirror committing one, an archive of blobs
 * that may hold thousands): no collection runs until it is over, when the function given back is
 * called, and then not before QUIET_MS. The quiet time after the last large work ended could run out
 * in the middle of the next one, which the timer did not know had begun; a collection then reduced
 * nothing that work still used, and stopped the event loop, every poll with it, for longest, at the
 * heap's largest. Work that turned out small (`large` false) asks for no collection of its own, but
 * one it held off still runs after it.
 */
export function largeWorkBegun(quietMs = QUIET_MS): (large?: boolean) => void {
  underWay += 1;
  const heldOff = timer !== undefined;
  clearTimeout(timer);
  timer = undefined;
  let over = false;
  return (large = true) => {
    if (over) return;
    over = true;
    underWay -= 1;
    if (large || heldOff || deferred) releaseMemorySoon(quietMs);
  };
}

/** How many times memory was given back (the tests read it). */
export function memoryReleases(): number {
  return released;
}
