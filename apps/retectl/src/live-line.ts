/** Where a live line writes: stdout, or a test's sink. */
export interface LineStream {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface LiveLine {
  /** `line` as it reads now; `state` what it says without the clock, so a log gets a line only when that changes. */
  update(line: string, state: string): void;
  /** Ends the line on a terminal; the next output starts on a line of its own. */
  done(): void;
}

/**
 * Progress that lasts, shown as one line: on a terminal rewritten in place at each update; otherwise
 * (a log, a pipe) written once each time its state changes, so a CI log shows every change without a
 * line per second. `publish --wait` and `rollout status --watch` show theirs this way.
 */
export function liveLine(stream: LineStream = process.stdout): LiveLine {
  let last: string | undefined;
  let drawn = false;
  return {
    update(line, state) {
      if (stream.isTTY) {
        stream.write(`\r\u001b[K${line}`);
        drawn = true;
        return;
      }
      if (state === last) return;
      last = state;
      stream.write(`${line}\n`);
    },
    done() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
