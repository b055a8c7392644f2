/**
 * The names of the flags the process was started with, on the command line or in NODE_OPTIONS, as V8
 * reads them: `_` as `-`, without the leading `--`, a `no-` or a value (`--no_maglev` gives `maglev`,
 * `--semi-space-growth-factor=4` gives `semi-space-growth-factor`). The start-up holds
 * (young-generation.ts, compiler-tiers.ts) leave alone what the operator chose here.
 */
export function givenFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const names: string[] = [];
  for (const arg of [...execArgv, ...(nodeOptions ?? '').split(/\s+/)]) {
    const name = /^--(?:no-)?([a-z0-9-]+)(?:=|$)/.exec(arg.replace(/_/g, '-'))?.[1];
    if (name !== undefined) names.push(name);
  }
  return names;
}
