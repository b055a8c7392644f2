import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * retectl as an operator installs it without this repository: `npm run package:cli` builds one ES
 * module and an npm tarball; the tarball goes into a fresh prefix with `npm install -g --prefix`, and
 * the installed command runs from a folder far from this tree (no node_modules to fall back on).
 */
describe('the installable retectl', () => {
  const work = mkdtempSync(join(tmpdir(), 'retectl-package-'));
  const out = join(work, 'out');
  const prefix = join(work, 'prefix');
  const elsewhere = join(work, 'elsewhere');
  const env = { PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`, HOME: join(work, 'home') };
  const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: elsewhere, env, encoding: 'utf8' });

  beforeAll(() => {
    execFileSync(process.execPath, [resolve('scripts/package-cli.mjs'), '--out', out], { stdio: 'pipe' });
    execFileSync('mkdir', ['-p', elsewhere, env.HOME]);
    const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`no tarball in ${out}: ${readdirSync(out).join(', ')}`);
    // No dependencies to fetch: --offline proves the tarball is all it needs.
    execFileSync('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(out, tarball)], {
      cwd: elsewhere,
      env,
      stdio: 'pipe',
    });
  }, 300_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('runs the single file with node alone', () => {
    const r = run(process.execPath, [join(out, 'retectl.mjs'), '--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('installs as `retectl` on the PATH, which validates a good rete and locates the errors of a bad one', () => {
    expect(run('retectl', ['--version']).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(run('retectl', ['init', 'rete']).status).toBe(0);
    const good = run('retectl', ['validate', '-C', 'rete']);
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);

    cpSync(resolve('test/fixtures/rete/port-too-big'), join(elsewhere, 'bad'), { recursive: true });
    const bad = run('retectl', ['validate', '-C', 'bad']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/nodes\.yaml:\d+:\d+/);
  });

  it('prints a bash completion script that completes commands and subcommands', () => {
    const complete = (line: string) => {
      const words = line.split(' ');
      const script = `source <(retectl completion bash)
complete -p retectl
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_retectl; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = run('bash', ['-c', script]);
      expect(r.stderr).toBe('');
      return r.stdout.trim().split('\n');
    };
    const [registered, ...publish] = complete('retectl pu');
    expect(registered).toBe('complete -o default -F _retectl retectl');
    expect(publish).toEqual(['publish']);
    expect(complete('retectl token c').slice(1)).toEqual(['create']);
    expect(complete('retectl publish --pr').slice(1)).toEqual(['--prune']);
    expect(complete('retectl -C rete ke').slice(1)).toEqual(['keys']);
  });

  it('refuses a shell it has no script for, as a usage error', () => {
    // fish has one now; tcsh does not.
    const r = run('retectl', ['completion', 'tcsh']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('bash, zsh or fish');
    expect(r.stdout).toBe('');
  });
});
