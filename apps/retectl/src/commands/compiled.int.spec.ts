import { jest } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { digestsJsonText, EXAMPLE_RETE } from '#rete';
import { sha256Hex } from '#bundle';
import { RetectlError } from '../errors.js';
import { run as compile } from './compile.js';
import { run } from './compiled.js';
import { editPacked, packedNode } from '../testing/packed-tree.js';

/** Not UTF-8 (0xff never is): the listing gives it as base64, the artifact argument as its bytes. */
const BLOB = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x0a]);

const GAMMA = `nodes:
  - name: gamma
    kind: server
    listen: 10.0.0.3:7946
    resources:
      files:
        - { path: /etc/motd, content: "hello\\n" }
        - { path: /usr/local/share/blob.bin, source: files/blob.bin }
`;

describe('retectl compiled on a real folder', () => {
  let base: string;
  let rete: string;
  let compiled: string;
  let stdout: Buffer[];
  const write = (file: string, content: string | Buffer) => {
    mkdirSync(dirname(join(rete, file)), { recursive: true });
    writeFileSync(join(rete, file), content);
  };
  const compiledRun = async (node: string, o: { artifact?: string; out?: string; json?: boolean } = {}): Promise<Buffer> => {
    stdout = [];
    await run({ dir: rete, node, ...o });
    return Buffer.concat(stdout);
  };
  const refusal = async (node: string, o: { artifact?: string; out?: string } = {}): Promise<RetectlError> => {
    const e = await compiledRun(node, o).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(RetectlError);
    return e as RetectlError;
  };
  /** Every file of a folder with its bytes. */
  const folder = (dir: string) => new Map(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'compiled-'));
    rete = join(base, 'rete');
    compiled = join(rete, '.flor', 'compiled');
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) write(file, text);
    write('nodes/gamma.yaml', GAMMA);
    write('files/blob.bin', BLOB);
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(Buffer.from(chunk as string | Uint8Array)), true));
    jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(base, { recursive: true, force: true });
  });

  it('says there is nothing compiled yet, before the first compile', async () => {
    const e = await refusal('alpha');
    expect(e.code).toBe('stale_compile');
    expect(e.message).toBe('nothing is compiled in .flor/compiled yet: run retectl compile');
  });

  describe('after a compile', () => {
    beforeEach(async () => {
      await compile({ dir: rete });
    });

    it('lists every artifact of the node with its size and sha256, text as text and other bytes as base64', async () => {
      const onDisk = packedNode(rete, 'gamma');
      const digests = JSON.parse(onDisk.get('digests.json')!.toString()) as { set_digest: string };
      const blobName = `file-${sha256Hex(BLOB)}`;
      const names = [...onDisk.keys()].filter((n) => n !== 'digests.json').sort();
      expect(names).toEqual(['agent.json', blobName, `file-${sha256Hex('hello\n')}`, 'flor.json', 'resources.json'].sort());

      const json = JSON.parse((await compiledRun('gamma', { json: true })).toString()) as {
        node: string;
        set_digest: string;
        artifacts: { name: string; sha256: string; size: number; encoding: string; content: string }[];
      };
      expect(json.node).toBe('gamma');
      expect(json.set_digest).toBe(digests.set_digest);
      expect(json.artifacts.map((a) => a.name)).toEqual(names);
      for (const a of json.artifacts) {
        const bytes = onDisk.get(a.name)!;
        expect(a).toEqual({
          name: a.name,
          sha256: sha256Hex(bytes),
          size: bytes.byteLength,
          encoding: a.name === blobName ? 'base64' : 'utf-8',
          content: a.name === blobName ? BLOB.toString('base64') : bytes.toString(),
        });
      }

      const text = (await compiledRun('gamma')).toString();
      expect(text.split('\n')[0]).toBe(`node gamma as compiled, set ${digests.set_digest}`);
      expect(text).toContain(
        `--- flor.json (${onDisk.get('flor.json')!.byteLength} bytes, sha256 ${sha256Hex(onDisk.get('flor.json')!)})\n${onDisk.get('flor.json')!.toString()}`,
      );
      expect(text).toContain(`--- ${blobName} (5 bytes, sha256 ${sha256Hex(BLOB)})\n(binary, base64)\n${BLOB.toString('base64')}\n`);
    });

    it("prints one artifact's exact bytes alone", async () => {
      expect(await compiledRun('gamma', { artifact: `file-${sha256Hex(BLOB)}` })).toEqual(BLOB);
      expect(await compiledRun('alpha', { artifact: 'flor.json' })).toEqual(packedNode(rete, 'alpha').get('flor.json'));
      const e = await refusal('alpha', { artifact: 'resources.json' });
      expect(e.code).toBe('not_found');
      expect(e.message).toBe('node alpha has no artifact resources.json: it has agent.json, flor.json');
    });

    it('writes the folder flor agent apply --set reads: the artifacts beside the digests.json that lists them', async () => {
      const out = join(base, 'copy', 'gamma-set');
      const said = (await compiledRun('gamma', { out })).toString();
      const digests = JSON.parse(packedNode(rete, 'gamma').get('digests.json')!.toString()) as { set_digest: string };
      expect(said).toBe(`wrote the set of node gamma (${digests.set_digest}) to ${out}: 5 artifacts and digests.json\n`);
      expect(folder(out)).toEqual(packedNode(rete, 'gamma'));
      const artifacts = new Map([...folder(out)].filter(([n]) => n !== 'digests.json'));
      expect(readFileSync(join(out, 'digests.json'), 'utf8')).toBe(
        digestsJsonText('gamma', new Map([...artifacts].map(([n, b]) => [n, n.startsWith('file-') ? b : b.toString()]))),
      );
      // An empty folder is filled too; nothing is left beside it.
      const empty = join(base, 'empty');
      mkdirSync(empty);
      await compiledRun('alpha', { out: empty });
      expect(folder(empty)).toEqual(packedNode(rete, 'alpha'));
      expect(readdirSync(base).sort()).toEqual(['copy', 'empty', 'rete']);
    });

    it('refuses a folder that holds anything, and leaves it as it was', async () => {
      const out = join(base, 'taken');
      mkdirSync(out);
      writeFileSync(join(out, 'flor.json'), 'another set\n');
      const e = await refusal('alpha', { out });
      expect(e.code).toBe('io');
      expect(e.message).toBe(`--out ${out} is not empty (1 entries): give a new folder, so that no other set's files are mixed in`);
      expect(folder(out)).toEqual(new Map([['flor.json', Buffer.from('another set\n')]]));
      expect(readdirSync(base).sort()).toEqual(['rete', 'taken']);
    });

    it('refuses a node the tree does not hold, naming the nodes it does', async () => {
      const e = await refusal('delta');
      expect(e.code).toBe('not_found');
      expect(e.message).toBe('node delta is not in the compiled tree (4 nodes: alpha, beta, gamma, laptop)');
    });

    it('refuses a tree older than the YAML, and writes no folder', async () => {
      write('nodes/gamma.yaml', GAMMA.replace('10.0.0.3:7946', '10.0.0.4:7946'));
      const out = join(base, 'stale');
      const e = await refusal('gamma', { out });
      expect(e.code).toBe('stale_compile');
      expect(e.message).toMatch(/: run retectl compile$/);
      expect(existsSync(out)).toBe(false);
    });

    it('refuses a compiled file changed by hand since the compile, and writes no folder', async () => {
      editPacked(rete, 'alpha', 'flor.json', (bytes) => bytes.toString().replace('10.0.0.2', '10.0.0.9'));
      const out = join(base, 'edited');
      const e = await refusal('alpha', { out });
      expect(e.code).toBe('stale_compile');
      expect(e.message).toMatch(
        new RegExp(`^${compiled}/pack-[0-9a-f]{16} was changed: alpha's flor.json is not the one compiled, since the last compile; run retectl compile$`),
      );
      expect(existsSync(out)).toBe(false);
    });

    it('takes an artifact or --out, not both', async () => {
      const e = await refusal('alpha', { artifact: 'flor.json', out: join(base, 'x') });
      expect(e.code).toBe('usage');
    });
  });
});
