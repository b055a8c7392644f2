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
