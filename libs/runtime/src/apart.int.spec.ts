import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runApart } from './apart.js';

// The built callers' scripts end with runAsScript; the coordinator's end-to-end tests run those (a
// new embedded data dir, an apt key file that holds no key). Here, scripts of the same protocol
// written out by hand: one JSON line on stdout, or a message on stderr and exit status 1.
describe('work run apart', () => {
  let dir: string;
  let caller: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-apart-'));
    caller = pathToFileURL(join(dir, 'caller.js')).href;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const script = (name: string, body: string) => writeFileSync(join(dir, name), body);
  const never = () => Promise.reject(new Error('ran in this process'));

  it('runs the script beside a built caller in another process, with its argument, and gives what it printed', async () => {
    script('child.mjs', 'process.stdout.write(JSON.stringify({ arg: process.argv[2], pid: process.pid }) + "\\n");\n');
    const got = await runApart<{ arg: string; pid: number }>({ from: caller, script: './child.mjs', arg: 'a b', here: never, failure: 'x' });
    expect(got.arg).toBe('a b');
    expect(got.pid).not.toBe(process.pid);
  });

  it("does not hand the caller's NODE_OPTIONS to the child", async () => {
    script('child.mjs', 'process.stdout.write(JSON.stringify(process.env.NODE_OPTIONS ?? null));\n');
    const before = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = '--max-old-space-size=64';
    try {
      expect(await runApart({ from: caller, script: './child.mjs', arg: '', here: never, failure: 'x' })).toBe('');
    } finally {
      if (before === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = before;
    }
  });

  it("fails with what the work is about and the child's own message", async () => {
    script('child.mjs', 'process.stderr.write("no key in it\\n"); process.exitCode = 1;\n');
    await expect(runApart({ from: caller, script: './child.mjs', arg: '', here: never, failure: 'the apt repository key /k' })).rejects.toThrow(
      /^the apt repository key \/k: no key in it$/,
    );
  });

  it('fails naming the script when there is none beside the caller', async () => {
    await expect(runApart({ from: caller, script: './missing.js', arg: '', here: never, failure: 'creating it failed' })).rejects.toThrow(
      /^creating it failed: .*missing\.js/s,
    );
  });

  it('runs the work in this process for a caller in the TypeScript sources, failing the same way', async () => {
    const from = pathToFileURL(join(dir, 'caller.ts')).href;
    expect(await runApart({ from, script: './absent.js', arg: '', here: () => Promise.resolve(process.pid), failure: 'x' })).toBe(process.pid);
    await expect(
      runApart({ from, script: './absent.js', arg: '', here: () => Promise.reject(new Error('no key in it')), failure: 'the key /k' }),
    ).rejects.toThrow(/^the key \/k: no key in it$/);
  });
});
