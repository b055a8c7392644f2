import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE } from '#rete';
import { RETECTL } from './support/retectl-process.js';

/**
 * Loaded before retectl: appends the URL of every module it loads to $LOADED_LOG, and at its exit the
 * runtime's own modules it loaded (process.moduleLoadList), each as `builtin:<name>`.
 */
const RECORD_LOADS = `data:text/javascript,${encodeURIComponent(
  "import { registerHooks } from 'node:module'; import { appendFileSync } from 'node:fs'; registerHooks({ load(url, context, next) { appendFileSync(process.env.LOADED_LOG, url + '\\n'); return next(url, context); } });" +
    " process.on('exit', () => appendFileSync(process.env.LOADED_LOG, process.moduleLoadList.map((m) => 'builtin:' + m + '\\n').join('')));",
)}`;

/** retectl's start: it loads the modules of the command it runs, not every command's. */
describe('retectl start-up', () => {
  let base: string;
  let runs = 0;

  /** The built retectl run with args: its exit code, output, the retectl command and contracts modules it loaded, and whether it loaded zod. */
  const retectl = (
    args: string[],
  ): Promise<{ code: number; stdout: string; stderr: string; commands: string[]; contracts: string[]; builtins: string[]; zod: boolean }> => {
    const log = join(base, `loaded-${++runs}.txt`);
    writeFileSync(log, '');
    return new Promise((done) => {
      const env = { PATH: process.env.PATH ?? '', HOME: '/nonexistent', LOADED_LOG: log };
      execFile(process.execPath, ['--import', RECORD_LOADS, RETECTL, ...args], { env }, (error, stdout, stderr) => {
        const loaded = readFileSync(log, 'utf8').split('\n');
        /** The names of the files loaded from a folder, each once. */
        const filesIn = (folder: string) => [...new Set(loaded.filter((url) => url.includes(folder)).map((url) => url.slice(url.lastIndexOf('/') + 1)))];
        const builtins = loaded.filter((line) => line.startsWith('builtin:')).map((line) => line.slice('builtin:'.length));
        const zod = loaded.some((url) => url.includes('/node_modules/zod/'));
        done({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          stdout,
          stderr,
          commands: filesIn('/apps/retectl/src/commands/'),
          contracts: filesIn('/libs/contracts/src/').sort(),
          builtins,
          zod,
        });
      });
    });
  };

  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'retectl-startup-'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("compile loads the compile command and no other, and the contracts of the files it reads and writes, not the API's", async () => {
    const dir = join(base, 'rete');
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const run = await retectl(['compile', '-C', dir]);
    expect(run).toMatchObject({ code: 0, stderr: '', commands: ['compile.js'] });
    expect(run.stdout).toMatch(/^compiled 3 nodes into \.flor\/compiled: 3 new, /m);
    // The API's schemas (api.schema.js, the largest, and the agent's and the bundle's behind it) are
    // built by the commands that talk to a coordinator, not by a compile.
    expect(run.contracts).toEqual([
      'artifacts.schema.js',
      'files.js',
      'host.schema.js',
      'local-set.schema.js',
      'plain.js',
      'primitives.schema.js',
      'rete.schema.js',
      'rollout.schema.js',
      'trust.schema.js',
    ]);
  });

  it('--version, --help and an unknown command load no command and no schema at all, and answer as before', async () => {
    expect(await retectl(['--version'])).toMatchObject({ code: 0, stdout: '0.1.0\n', stderr: '', commands: [], zod: false });
    const help = await retectl(['compile', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '', commands: [], zod: false });
    expect(help.stdout).toMatch(/^Usage: retectl compile \[options\]\n/);
    expect(await retectl(['frobnicate'])).toMatchObject({ code: 2, stdout: '', stderr: "retectl: unknown command 'frobnicate'\n", commands: [], zod: false });
  });

  it('refuses a bad argument before loading any command or schema', async () => {
    // The argument parsers use the plain contracts: the same checks, without the schemas behind them.
    const bad = [
      [['token', 'create', '--role', 'root'], 'must be reader, publisher or admin'],
      [['publish', '--allow-ineligible', 'Alpha'], '"Alpha" is not a node name'],
      [['publish', '--confirm-within', '5s'], 'expected a duration from 10s to 7d'],
    ] as const;
    for (const [args, message] of bad) {
      const run = await retectl([...args]);
      expect(run).toMatchObject({ code: 2, stdout: '', commands: [], zod: false });
      expect(run.stderr).toContain(message);
    }
  });

  it("a command that talks to a coordinator makes its request without loading the runtime's fetch (undici)", async () => {
    // An ES module import of node:http reads every one of its exports, fetch's and WebSocket's among them, which loads undici.
    const run = await retectl(['whoami', '--coordinator', 'http://127.0.0.1:1', '--token', 'flt.x.y']);
    expect(run).toMatchObject({ code: 1, stderr: expect.stringMatching(/^retectl: cannot reach the coordinator at http:\/\/127\.0\.0\.1:1: ECONNREFUSED/) });
    expect(run.builtins).toContain('NativeModule http');
    expect(run.builtins.filter((m) => m.includes('undici'))).toEqual([]);
  });
});
