import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE, validateRete } from '#rete';
import { RetectlError } from './errors.js';
import { sha256Hex } from '#bundle';
import { fileClock, readSources, settledStamps, type ReteSource } from './rete-dir.js';

/** The error readSources throws, for asserting on its code and on the path it names. */
function failure(root: string): RetectlError {
  try {
    readSources(root);
  } catch (e) {
    if (e instanceof RetectlError) return e;
    throw e;
  }
  throw new Error('readSources did not fail');
}

describe('readSources on a real folder', () => {
  let base: string;
  let rete: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  const nodeCount = () => validateRete(readSources(rete)).rete?.nodes.length;

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'rete-dir-'));
    rete = join(base, 'rete');
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) write(join(rete, file), text);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('follows a symlink to a file, naming it by the link', () => {
    const shared = join(base, 'shared', 'servers.yaml');
    write(shared, EXAMPLE_RETE['nodes/servers.yaml']);
    rmSync(join(rete, 'nodes/servers.yaml'));
    symlinkSync(shared, join(rete, 'nodes/servers.yaml'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
    expect(nodeCount()).toBe(3);
  });

  it('follows a symlink to a folder', () => {
    const shared = join(base, 'shared-nodes');
    mkdirSync(shared);
    for (const f of ['servers.yaml', 'devices.yaml']) write(join(shared, f), EXAMPLE_RETE[`nodes/${f}`]);
    rmSync(join(rete, 'nodes'), { recursive: true });
    symlinkSync(shared, join(rete, 'nodes'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
    expect(nodeCount()).toBe(3);
  });

  it('refuses a dangling symlink, naming it', () => {
    rmSync(join(rete, 'nodes/servers.yaml'));
    symlinkSync(join(base, 'gone.yaml'), join(rete, 'nodes/servers.yaml'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toContain(join(rete, 'nodes/servers.yaml'));
    expect(e.message).toMatch(/dangling symlink/);
  });

  it('refuses a dangling symlink whatever its name: it may have been a folder of nodes', () => {
    rmSync(join(rete, 'nodes'), { recursive: true });
    symlinkSync(join(base, 'unmounted'), join(rete, 'nodes'));
    expect(failure(rete).message).toContain(join(rete, 'nodes'));
  });

  it('refuses symlinks that point at each other', () => {
    symlinkSync(join(rete, 'b.yaml'), join(rete, 'a.yaml'));
    symlinkSync(join(rete, 'a.yaml'), join(rete, 'b.yaml'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toMatch(/symlink loop/);
    expect(e.message).toMatch(/[ab]\.yaml/);
  });

  it('refuses a symlink to a folder that holds it, instead of walking it forever', () => {
    symlinkSync('..', join(rete, 'nodes', 'up'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toMatch(/symlink loop/);
    expect(e.message).toContain(join(rete, 'nodes', 'up'));
  });

  it('still skips dot-folders and files that are not YAML', () => {
    write(join(rete, '.flor', 'x.yaml'), 'nodes: [');
    write(join(rete, 'README.md'), '# notes');
    symlinkSync(join(base, 'gone'), join(rete, '.hidden-link'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
  });

  /** A file's stamp as readSources takes it. */
  const stampText = (path: string): string => {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  };

  it('reads a file whose stamp a record vouches for only when its bytes are asked for, taking its digest from the record', () => {
    const servers = join(rete, 'nodes/servers.yaml');
    const vouched = 'd'.repeat(64);
    const asked: [string, string][] = [];
    const sources = readSources(rete, (file, stamp) => {
      asked.push([file, stamp]);
      return file === 'nodes/servers.yaml' && stamp === stampText(servers) ? vouched : undefined;
    });
    // Every file's stamp is put to the record's test, each as stat gives it.
    expect(asked.map(([file]) => file).sort()).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
    for (const [file, stamp] of asked) expect(stamp).toBe(stampText(join(rete, file)));
    const byFile = new Map(sources.map((s) => [s.file, s]));
    const kept = byFile.get('nodes/servers.yaml') as ReteSource;
    const policy = byFile.get('policy.yaml') as ReteSource;
    expect(kept.digest).toBe(vouched);
    expect(policy.digest).toBe(sha256Hex(EXAMPLE_RETE['policy.yaml']));
    // Not read yet: gone now, its bytes cannot be had; the other files were read at once.
    rmSync(servers);
    rmSync(join(rete, 'policy.yaml'));
    expect(() => kept.bytes).toThrow(RetectlError);
    expect(Buffer.from(policy.bytes).toString()).toBe(EXAMPLE_RETE['policy.yaml']);
  });

  it('gives a file another stamp when it is written, touched, or replaced by one of the same size and mtime', async () => {
    const path = join(rete, 'policy.yaml');
    const stampNow = () => readSources(rete).find((s) => s.file === 'policy.yaml')?.stamp.text;
    const first = stampNow();
    expect(first).toBe(stampText(path));
    const { mtime, size } = statSync(path);
    // A copy that keeps the size and the mtime (cp -p, rsync -t), renamed over the file.
    const text = readFileSync(path, 'utf8');
    const other = join(rete, 'policy.yaml.new');
    writeFileSync(other, text.replace(/a/, 'b'));
    utimesSync(other, mtime, mtime);
    expect(statSync(other).size).toBe(size);
    renameSync(other, path);
    const replaced = stampNow();
    expect(replaced).not.toBe(first);
    // Written in place with its mtime put back: its ctime still moves (once the file system's clock,
    // which may tick every few milliseconds, has; settledStamps keeps no stamp that recent).
    await new Promise((resolve) => setTimeout(resolve, 50));
    writeFileSync(path, text);
    utimesSync(path, mtime, mtime);
    expect(stampNow()).not.toBe(replaced);
  });

  it("keeps the stamps of files that last changed at least two seconds before the clock, on the clock's device", () => {
    const at = (file: string, ctimeNs: bigint, dev = 7n): ReteSource => ({
      file,
      bytes: new Uint8Array(),
      digest: '',
      stamp: { text: `${file}@${ctimeNs}`, dev, ctimeNs },
    });
    const clock = { dev: 7n, ns: 10_000_000_000n };
    const sources = [at('old.yaml', 1n), at('edge.yaml', 8_000_000_000n), at('recent.yaml', 8_000_000_001n), at('elsewhere.yaml', 1n, 8n)];
    expect(settledStamps(sources, clock)).toEqual(
      new Map([
        ['old.yaml', 'old.yaml@1'],
        ['edge.yaml', 'edge.yaml@8000000000'],
      ]),
    );
    expect(settledStamps(sources, undefined)).toEqual(new Map());
  });

  it("reads the file system's clock in .flor/cache, leaving nothing there, and none without that folder", () => {
    expect(fileClock(rete)).toBeUndefined();
    const cache = join(rete, '.flor', 'cache');
    mkdirSync(cache, { recursive: true });
    writeFileSync(join(cache, 'before'), '');
    const before = statSync(join(cache, 'before'), { bigint: true });
    const clock = fileClock(rete);
    expect(clock?.dev).toBe(before.dev);
    expect(clock!.ns >= before.ctimeNs).toBe(true);
    expect(readdirSync(cache)).toEqual(['before']);
  });
});
