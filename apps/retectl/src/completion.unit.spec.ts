import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli } from './cli.js';
import { bashCompletion, completionTable, fishCompletion, nodeCommands, zshCompletion } from './completion.js';

describe('shell completion from the program', () => {
  const table = completionTable(buildCli().program);

  it('lists every top-level command and the subcommands under each group', () => {
    expect(table.get('')).toEqual(
      expect.arrayContaining(['publish', 'plan', 'validate', 'status', 'token', 'keys', 'audit', 'completion', '--version', '--dir', '-C']),
    );
    expect(table.get('')).toEqual(expect.arrayContaining(['whoami', 'retire']));
    expect(table.get('token')).toEqual(expect.arrayContaining(['create', 'list', 'revoke']));
    expect(table.get('keys')).toEqual(expect.arrayContaining(['list', 'rotate', 'revoke']));
  });

  it("lists a command's own options", () => {
    expect(table.get('publish')).toEqual(expect.arrayContaining(['--message', '-m', '--prune', '--wait', '--json', '--coordinator', '--help']));
    expect(table.get('token create')).toEqual(expect.arrayContaining(['--role', '--name', '--ttl', '--no-expiry']));
    expect(table.get('retire')).toEqual(expect.arrayContaining(['--lost', '--message']));
  });

  it('writes a bash script that registers the function and a zsh one that loads bash completion first', () => {
    const bash = bashCompletion(table);
    expect(bash).toContain('complete -o default -F _retectl retectl');
    expect(bash).toContain('"token create") echo "');
    const zsh = zshCompletion(table);
    expect(zsh.indexOf('bashcompinit')).toBeLessThan(zsh.indexOf('complete -o default'));
  });

  const program = buildCli().program;
  const nodePaths = nodeCommands(program);

  it('knows which commands take a node first', () => {
    expect(nodePaths).toEqual(expect.arrayContaining(['plan', 'status', 'history', 'show', 'diff', 'rollback', 'retire', 'token create']));
    expect(nodePaths).not.toContain('publish');
    expect(nodePaths).not.toContain('confirm');
  });

  /** Runs a shell on a script in a rete folder whose compiled tree holds alpha and beta. */
  const inRete = (run: (dir: string) => string): string => {
    const dir = mkdtempSync(join(tmpdir(), 'retectl-completion-'));
    try {
      // The index as a compile writes it: its generation, then a line a node (name, fingerprint, entry, set digest, bucket).
      mkdirSync(join(dir, '.flor/compiled'), { recursive: true });
      writeFileSync(join(dir, '.flor/compiled/index'), '0123456789abcdef\nalpha fp 0123456789abcdef:0:10:20 set 7\nbeta fp 0123456789abcdef:20:10:20 set 9\n');
      return run(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('completes node names from the rete in the current directory, in bash', () => {
    const words = (line: string) =>
      inRete((dir) => {
        writeFileSync(join(dir, 'r.bash'), bashCompletion(table, 'retectl', nodePaths));
        const typed = line.split(' ');
        const script = `source r.bash; COMP_WORDS=(${typed.map((w) => `"${w}"`).join(' ')}); COMP_CWORD=${typed.length - 1}; _retectl; printf '%s\\n' "\${COMPREPLY[@]}"`;
        return execFileSync('bash', ['-c', script], { cwd: dir, encoding: 'utf8' });
      }).split('\n');
    expect(words('retectl history ')).toEqual(expect.arrayContaining(['alpha', 'beta', '--limit']));
    expect(words('retectl retire a')).toEqual(['alpha', '']);
    expect(words('retectl publish ')).not.toContain('alpha');
  });

  it('writes a fish script from the same table, with node names', () => {
    const fish = fishCompletion(table, 'retectl', nodePaths);
    expect(fish).toContain("complete -c retectl -f -a '(__retectl_complete)'");
    expect(fish).toMatch(/case 'token create'\n\s+printf '%s\\n' .*--role/);
    expect(fish).toMatch(/case 'history'\n.*\n\s+__retectl_nodes/);
  });

  // Where fish is installed, the script is run as an operator's shell would.
  const hasFish = spawnSync('fish', ['--version']).status === 0;
  (hasFish ? it : it.skip)('completes commands, subcommands, options and node names in fish', () => {
    const complete = (line: string) =>
      inRete((dir) => {
        writeFileSync(join(dir, 'r.fish'), fishCompletion(table, 'retectl', nodePaths));
        return execFileSync('fish', ['--no-config', '-c', `source r.fish; complete -C '${line}'`], { cwd: dir, encoding: 'utf8' });
      })
        .split('\n')
        .map((l) => l.split('\t')[0]);
    expect(complete('retectl ')).toEqual(expect.arrayContaining(['publish', 'plan', 'token']));
    expect(complete('retectl token ')).toEqual(expect.arrayContaining(['create', 'list', 'revoke']));
    expect(complete('retectl history ')).toEqual(expect.arrayContaining(['alpha', 'beta']));
    expect(complete('retectl plan --diff b')).toEqual(['beta', '']);
    expect(complete('retectl publish --')).toContain('--wait');
    expect(complete('retectl publish ')).not.toContain('alpha');
  });
});
