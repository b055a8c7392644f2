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
