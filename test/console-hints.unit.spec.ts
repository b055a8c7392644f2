import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { HINT } from '../apps/console/src/hints.js';
import { buildCli } from '../apps/retectl/src/cli.js';

/** Placeholders in the console's hints, as an operator would fill them in. */
const FILLED: Record<string, string> = {
  NAME: 'auditor',
  NODE: 'web-1',
  NODES: 'web-1,web-2',
  ID: '6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b',
  FILE: 'checkpoint.txt',
};

/**
 * retectl's real command line with every action replaced by one that records what it was called
 * with: a hint is parsed exactly as retectl would parse it (unknown commands, unknown or malformed
 * options, missing arguments all throw), and nothing runs.
 */
function dryParse(words: readonly string[]): string {
  const { program } = buildCli();
  let ran: string | null = null;
  const stub = (c: Command, path: string[]) => {
    c.exitOverride();
    c.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    if (c.commands.length === 0) c.action(() => void (ran = [...path, c.name()].join(' ')));
    for (const sub of c.commands) stub(sub, c === program ? [] : [...path, c.name()]);
  };
  stub(program, []);
  program.parse(['node', 'retectl', ...words]);
  if (ran === null) throw new Error(`${words.join(' ')} ran no command`);
  return ran;
}

describe('the retectl commands the console suggests', () => {
  it.each(Object.entries(HINT))('%s: %s parses with retectl', (_name, hint) => {
    const words = hint.split(' ');
    expect(words[0]).toBe('retectl');
    expect(() => dryParse(words.slice(1).map((w) => FILLED[w] ?? w))).not.toThrow();
  });

  it('is checked: a command retectl does not have fails the parse', () => {
    expect(() => dryParse(['token', 'create', '--node', 'web-1'])).toThrow();
    expect(() => dryParse(['tokens', 'list'])).toThrow();
  });

  it('is where every page takes its hints from: no page spells a retectl command out itself', () => {
    const dir = 'apps/console/src';
    const files = [...readdirSync(dir).map((f) => join(dir, f)), ...readdirSync(join(dir, 'pages')).map((f) => join(dir, 'pages', f))].filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.endsWith('hints.ts'),
    );
    const spelled = files.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((line) => /[`>'"]retectl [a-z]/.test(line) && !line.trimStart().startsWith('*') && !line.trimStart().startsWith('//'))
        .map((line) => `${f}: ${line.trim()}`),
    );
    expect(spelled).toEqual([]);
  });
});
