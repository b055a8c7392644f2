import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE } from '#rete';
import { STACK_TRACE } from './support/http.js';
import { runRetectl as retectl } from './support/retectl-process.js';

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
    expect(dangling.stderr).toBe(`retectl: ${join(dir, 'nodes/servers.yaml')} is a dangling symlink: its target ${join(base, 'shared', 'servers.yaml')} does not exist\n`);
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
});
