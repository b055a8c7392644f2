import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE } from '#rete';
import { STACK_TRACE } from './support/http.js';
import { RETECTL, runRetectl as retectl } from './support/retectl-process.js';

/** retectl reading a rete from disk and writing what it found, as real processes; no coordinator needed. */
describe('retectl reading the rete', () => {
  let base: string;
  const write = (path: string, text: string | Uint8Array) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  /** The example rete in a fresh folder under base. */
  const example = (name: string): string => {
    const dir = join(base, name);
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) write(join(dir, file), text);
    return dir;
  };

  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'retectl-io-'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('reads a nodes file that is a symlink, and refuses a dangling one', async () => {
    const dir = example('linked');
    write(join(base, 'shared', 'servers.yaml'), EXAMPLE_RETE['nodes/servers.yaml']);
    rmSync(join(dir, 'nodes/servers.yaml'));
    symlinkSync(join(base, 'shared', 'servers.yaml'), join(dir, 'nodes/servers.yaml'));
    expect(await retectl(['validate', '-C', dir])).toEqual({ code: 0, stdout: 'ok: 3 nodes, 1 group, 1 ACL rule, 0 warnings\n', stderr: '' });

    rmSync(join(base, 'shared'), { recursive: true });
    const dangling = await retectl(['validate', '-C', dir]);
    expect(dangling.code).toBe(1);
    expect(dangling.stderr).toBe(
      `retectl: ${join(dir, 'nodes/servers.yaml')} is a dangling symlink: its target ${join(base, 'shared', 'servers.yaml')} does not exist\n`,
    );
    expect(dangling.stderr).not.toMatch(STACK_TRACE);
  });

  it('refuses a rete file that is not UTF-8, naming the file and the offset of the first bad byte', async () => {
    const dir = example('latin1');
    // Saved as Latin-1, as an old editor would: "é" is the single byte 0xe9.
    const policy = Buffer.from(EXAMPLE_RETE['policy.yaml'].replace('operators reach', 'op\u00e9rateurs reach'), 'latin1');
    write(join(dir, 'policy.yaml'), policy);
    const offset = policy.indexOf(0xe9);
    const run = await retectl(['validate', '-C', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^policy\\.yaml:6:20: not valid UTF-8: byte 0xe9 at offset ${offset} \\[not_utf8\\]\n`));
    expect(run.stderr).toMatch(/^retectl: the rete does not validate: 1 error, 0 warnings\n$/m);
  });

  describe('-C before the command, as with git and make', () => {
    const OK = { code: 0, stdout: 'ok: 3 nodes, 1 group, 1 ACL rule, 0 warnings\n', stderr: '' };

    it('names the rete directory for the command that follows', async () => {
      const dir = example('dash-c');
      expect(await retectl(['-C', dir, 'validate'], { cwd: tmpdir() })).toEqual(OK);
      expect(await retectl(['--dir', dir, 'validate'], { cwd: tmpdir() })).toEqual(OK);
      expect(await retectl(['-C', dir, 'compile'], { cwd: tmpdir() })).toEqual(
        expect.objectContaining({ code: 0, stdout: expect.stringMatching(/^compiled 3 nodes/m) }),
      );
    });

    it('still takes -C after the command; a relative one is taken inside the first, as git does', async () => {
      const dir = example('dash-c-twice');
      expect(await retectl(['validate', '-C', dir], { cwd: tmpdir() })).toEqual(OK);
      expect(await retectl(['-C', base, 'validate', '-C', 'dash-c-twice'], { cwd: tmpdir() })).toEqual(OK);
      expect(await retectl(['-C', join(base, 'nowhere'), 'validate', '-C', dir], { cwd: tmpdir() })).toEqual(OK);
      const wrong = await retectl(['-C', dir, 'validate', '-C', 'nodes']);
      expect(wrong.stderr).toMatch(/^devices\.yaml:1:1: no file defines the mesh/m);
    });

    it('places init too', async () => {
      const run = await retectl(['-C', join(base, 'init-here'), 'init', 'sub'], { cwd: tmpdir() });
      expect(run.code).toBe(0);
      expect(await retectl(['validate', '-C', join(base, 'init-here', 'sub')])).toEqual(OK);
    });

    it("leaves options after the command to the command: show --version is the node's version", async () => {
      const run = await retectl(['show', 'alpha', '--version', 'latest']);
      expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(/--version must be a whole number/) });
      expect(await retectl(['--version'])).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
      expect((await retectl(['--help'])).stdout).toMatch(/^\s+-C, --dir <dir>\s+the rete directory/m);
    });
  });

  describe('a long report', () => {
    const ERRORS = 3000;
    let dir: string;
    /** A shell pipeline around the built CLI, as an operator types it. */
    const shell = (command: string): Promise<{ code: number; stdout: string }> =>
      new Promise((done) => {
        execFile(
          'bash',
          ['-c', command],
          { env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', CLI: RETECTL, NODE: process.execPath, DIR: dir }, maxBuffer: 64 * 1024 * 1024 },
          (error, stdout) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout }),
        );
      });

    beforeAll(() => {
      dir = join(base, 'many-errors');
      const nodes = Array.from({ length: ERRORS }, (_, i) => `  - { name: n${i}, kind: phone, listen: 10.0.0.1:7946 }\n`).join('');
      write(join(dir, 'rete.yaml'), `mesh: { name: big, coordinator: https://c.example }\nnodes:\n${nodes}`);
    });

    it('reaches a slow reader whole: every diagnostic, then the summary', async () => {
      // stderr as a parent process gives it (a socket, written asynchronously), read only after a second.
      const child = spawn(process.execPath, [RETECTL, 'validate', '-C', dir], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent' },
      });
      const chunks: Buffer[] = [];
      setTimeout(() => child.stderr.on('data', (c: Buffer) => chunks.push(c)), 1000);
      const code = await new Promise((done) => child.on('close', done));
      const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\n');
      expect(code).toBe(1);
      expect(lines.filter((l) => l.endsWith('[invalid_value]'))).toHaveLength(ERRORS);
      expect(lines).toHaveLength(ERRORS + 1);
      expect(lines.at(-1)).toBe(`retectl: the rete does not validate: ${ERRORS} errors, 0 warnings`);
    });

    it('keeps its exit status and its stderr when the reader of stdout stops early', async () => {
      const run = await shell('"$NODE" "$CLI" validate --json -C "$DIR" 2>"$DIR.err" | head -c 1 >/dev/null; echo "status ${PIPESTATUS[0]}"; cat "$DIR.err"');
      expect(run.stdout).toBe(`status 1\nretectl: the rete does not validate: ${ERRORS} errors, 0 warnings\n`);
    });
  });
});
