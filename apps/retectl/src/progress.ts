/** The bar itself, pure so it can be tested: `uploading [#########-----------]  12/40`. */
export function renderProgress(label: string, done: number, total: number, width = 30): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const digits = String(total).length;
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(done).padStart(digits)}/${total}`;
}

export interface Progress {
  tick(): void;
  done(): void;
}

/** A one-line progress bar redrawn in place; silent unless the stream is a terminal. */
export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { tick() {}, done() {} };
  let done = 0;
  const draw = () => stream.write(`\r${renderProgress(label, done, total)}`);
  draw();
  return {
    tick() {
      done++;
      draw();
    },
    done() {
      stream.write('\n');
    },
  };
}

export interface StagedProgress {
  /** Starts the next stage: its own label and count. */
  stage(label: string, total: number): void;
  tick(): void;
  done(): void;
}

/** Redraws at most this often: a tick per node of 100,000 must not be 100,000 writes to the terminal. */
const REDRAW_MS = 100;

/**
 * A bar for work that is usually quick: drawn on a terminal only, and only once the work has run for
 * `afterMs`; one line, overwritten stage by stage and cleared by `done` (before anything else is
 * printed), drawn again by a later stage.
 */
export function lateProgress(afterMs = 1000, stream: NodeJS.WriteStream = process.stderr, now: () => number = () => performance.now()): StagedProgress {
  if (!stream.isTTY) return { stage() {}, tick() {}, done() {} };
  const start = now();
  let label = '';
  let total = 0;
  let done = 0;
  let drawnAt = Number.NEGATIVE_INFINITY;
  let shown = false;
  const draw = (force: boolean) => {
    const t = now();
    if (t - start < afterMs || (!force && t - drawnAt < REDRAW_MS)) return;
    drawnAt = t;
    shown = true;
    // Back to the line's start and clear it: a shorter label must not leave the end of a longer one.
    stream.write(`\r\u001b[K${renderProgress(label, done, total)}`);
  };
  return {
    stage(next, count) {
      [label, total, done] = [next, count, 0];
      draw(true);
    },
    tick() {
      done++;
      draw(false);
    },
    // Clears the line; a later stage draws again.
    done() {
      if (shown) stream.write('\r\u001b[K');
      shown = false;
    },
  };
}
