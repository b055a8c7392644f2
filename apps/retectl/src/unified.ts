import { createTwoFilesPatch } from 'diff';
import { formatResourceChange, type ResourceChange } from '#rete';

/**
 * The renderer of a node's content change, shared by `retectl diff` (two published versions) and
 * `retectl plan --diff` (the head against the compiled tree): host resource changes first, by path and
 * package, then a unified diff per artifact, then a file resource's text under its host path.
 */
export interface NodeDiff {
  readonly resources: readonly ResourceChange[];
  /** Unified diffs of the artifacts other than file contents (those are diffed under their host path). */
  readonly artifacts: readonly string[];
  /** Unified diffs of the file resources whose text changed, labelled with their host path. */
  readonly files: readonly string[];
}

/** A unified diff with 3 lines of context, as the coordinator's GET /v1/nodes/{node}/diff writes it. */
export function unifiedPatch(oldLabel: string, newLabel: string, oldText: string, newText: string): string {
  return createTwoFilesPatch(oldLabel, newLabel, oldText, newText, undefined, undefined, { context: 3 });
}

/** The text of these bytes, or undefined when they are not UTF-8 (a binary file: its resource line says enough). */
export function textOf(bytes: string | Uint8Array): string | undefined {
  if (typeof bytes === 'string') return bytes;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

const SGR = { reset: '\u001b[0m', bold: '\u001b[1m', red: '\u001b[31m', green: '\u001b[32m', cyan: '\u001b[36m' };

/** A unified diff coloured as git does: headers bold, hunks cyan, removed lines red, added lines green. */
export function colourPatch(patch: string): string {
  return patch
    .split('\n')
    .map((line) => {
      if (line === '') return line;
      if (line.startsWith('===') || line.startsWith('--- ') || line.startsWith('+++ ') || line.startsWith('Index: ')) return `${SGR.bold}${line}${SGR.reset}`;
      if (line.startsWith('@@')) return `${SGR.cyan}${line}${SGR.reset}`;
      if (line.startsWith('-')) return `${SGR.red}${line}${SGR.reset}`;
      if (line.startsWith('+')) return `${SGR.green}${line}${SGR.reset}`;
      return line;
    })
    .join('\n');
}

/** A resource change line coloured by its sign (+ added, - removed, ~ changed). */
function colourResource(line: string): string {
  if (line.startsWith('+')) return `${SGR.green}${line}${SGR.reset}`;
  if (line.startsWith('-')) return `${SGR.red}${line}${SGR.reset}`;
  if (line.startsWith('~')) return `${SGR.cyan}${line}${SGR.reset}`;
  return line;
}

/** The lines printed for a node's change, coloured or not. */
export function renderNodeDiff(d: NodeDiff, colour: boolean): string[] {
  const resources = d.resources.map(formatResourceChange);
  const patches = [...d.artifacts, ...d.files];
  return colour ? [...resources.map(colourResource), ...patches.map(colourPatch)] : [...resources, ...patches];
}

/**
 * Whether to colour: only on a terminal, never with --no-color, and never when NO_COLOR is set to
 * anything but the empty string (no-color.org).
 */
export function useColour(flag: boolean | undefined, stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (flag === false) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true;
}
