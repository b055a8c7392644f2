import { buildCli } from './cli.js';
import { bashCompletion, completionTable, zshCompletion } from './completion.js';

describe('shell completion from the program', () => {
  const table = completionTable(buildCli().program);

  it('lists every top-level command and the subcommands under each group', () => {
    expect(table.get('')).toEqual(expect.arrayContaining(['publish', 'plan', 'validate', 'status', 'token', 'keys', 'audit', 'completion', '--version', '--dir', '-C']));
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
});
