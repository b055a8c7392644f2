/** Where commands print: stdout carries results (or JSON), stderr carries notes and progress. */
export const out = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};
export const note = (text: string): void => {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
};
export const outJson = (value: unknown): void => out(JSON.stringify(value, null, 2));
/** `1 node`, `2 nodes`. */
export const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

let verbose = false;

/** `-v, --verbose`: from now on, trace prints. */
export const setVerbose = (on: boolean): void => {
  verbose = on;
};

/**
 * One line of `--verbose` on stderr, stamped with the milliseconds since retectl's process started
 * (`retectl: +312 ms GET …`), so a slow command shows where its time went. Nothing without the flag;
 * the line is only made when it is printed.
 */
export const trace = (line: () => string): void => {
  if (verbose) note(`retectl: +${Math.round(performance.now())} ms ${line()}`);
};

/** Milliseconds for a trace line: one decimal below 100. */
export const traceMs = (ms: number): string => (ms < 100 ? ms.toFixed(1) : Math.round(ms).toString());
