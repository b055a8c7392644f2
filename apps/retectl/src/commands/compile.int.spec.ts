import { jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { HEAD_BUCKETS, type ReteFile } from '#contracts';
import { compileRete, digestsJsonText, EXAMPLE_RETE, formatDiagnostic, localSetDigest, nodeLabels, validateRete } from '#rete';
import { bucketOf, headBuckets, labelBuckets, sha256Hex } from '#bundle';
import { RetectlError } from '../errors.js';
import { MAX_PACKS, packsHold, readRecord } from '../compiled-output.js';
import { editPacked, packedIndex, packedNode, packedPacks, packedText } from '../testing/packed-tree.js';
import { loadCompiledTree, loadPublishable, readCompiled, readSources, sourceReader } from '../rete-dir.js';
import { run } from './compile.js';
import type { LocalHeads } from '../local-heads.js';

/** Every node's set digest, as heads hold them: the nodes of every bucket. */
const setsOf = (heads: LocalHeads | undefined) => heads && new Map(heads.inBuckets(new Set(Array.from({ length: HEAD_BUCKETS }, (_, b) => b))));

/** Where each node's entry is, as the compiled index says: a node whose entry a compile wrote again has a new place. */
const entries = (rete: string): Map<string, string> => new Map([...packedIndex(rete)].map(([node, e]) => [node, `${e.pack}:${e.offset}:${e.length}`]));

/** The nodes whose entries a compile wrote (or that came or went) between two listings. */
const touched = (before: Map<string, string>, after: Map<string, string>): string[] =>
  [...new Set([...before.keys(), ...after.keys()])].filter((n) => before.get(n) !== after.get(n)).sort();

/** Long enough for files written before it to have settled (rete-dir.ts, settledStamps: two seconds). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 2100));

/** A file's stamp as retectl takes it (rete-dir.ts, FileStamp). */
function stampText(path: string): string {
  const st = statSync(path, { bigint: true });
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

const SERVERS = `nodes:
  - { name: alpha, kind: server, listen: 10.0.0.1:7946, tags: [web], services: [{ name: web, port: 443 }] }
  - { name: beta, kind: server, listen: 10.0.0.2:7946, tags: [backend] }
  - { name: gamma, kind: server, listen: 10.0.0.3:7946, tags: [backend] }
`;

describe('retectl compile on a real folder', () => {
  let base: string;
  let rete: string;
  let compiled: string;
  let stdout: string[];
  let stderr: string[];
  const write = (file: string, text: string) => {
    mkdirSync(dirname(join(rete, file)), { recursive: true });
    writeFileSync(join(rete, file), text);
  };
  /** Where each node's entry is now, so that any entry written again shows. */
  const age = (): Map<string, string> => entries(rete);
  /**
   * Spoils the parse cache entry of every file but the one defining alpha; the check returned fails
   * unless every such entry is as spoilt, that is: unread by a compile, which would parse the file again.
   */
  const spoilOtherEntries = (): (() => void) => {
    const parsed = join(rete, '.flor', 'cache', 'parsed');
    const others = readdirSync(parsed).filter((e) => !(deserialize(readFileSync(join(parsed, e))) as ReteFile).nodes?.some((n) => n.name === 'alpha'));
    expect(others).toHaveLength(Object.keys(EXAMPLE_RETE).length - 1);
    for (const e of others) writeFileSync(join(parsed, e), 'not a serialised value');
    return () => {
      for (const e of others) expect(readFileSync(join(parsed, e), 'utf8')).toBe('not a serialised value');
    };
  };
  const compile = async (json = false, all = false) => {
    stdout = [];
    stderr = [];
    await run({ dir: rete, json, all });
    return stdout.join('');
  };

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'compile-'));
    rete = join(base, 'rete');
    compiled = join(rete, '.flor', 'compiled');
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) write(file, text);
    write('nodes/servers.yaml', SERVERS);
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true));
    jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true));
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(base, { recursive: true, force: true });
  });

  it('writes exactly what compiling the rete gives, and says what it wrote and how long it took', async () => {
    const out = await compile();
    const { rete: checked } = validateRete(readSources(rete));
    expect(readCompiled(rete)).toEqual(compileRete(checked!));
    expect(out.split('\n').at(-2)).toMatch(
      /^compiled 4 nodes into \.flor\/compiled: 4 new, 0 changed, 0 removed, 0 unchanged; files: 12 written, 0 unchanged, 0 removed; \d+\.\d\d s$/,
    );
    // One pack of every node's entry, and the index that says where each is.
    expect(readdirSync(compiled).sort()).toEqual(['index', ...packedPacks(rete)]);
    expect(packedPacks(rete)).toHaveLength(1);
  });

  it('lists at most 20 of the nodes that changed unless --all, as plan and publish do, then the summary', async () => {
    const edges = Array.from({ length: 25 }, (_, i) => `edge-${String(i).padStart(2, '0')}`);
    const edgesYaml = `nodes:\n${edges.map((n, i) => `  - { name: ${n}, kind: server, listen: 10.0.1.${i + 1}:7946 }\n`).join('')}`;
    write('nodes/edges.yaml', edgesYaml);
    const first = (await compile()).split('\n');
    // Added nodes in name order: alpha, beta, then the edges before gamma and laptop.
    expect(first.slice(0, 21)).toEqual([...['alpha', 'beta', ...edges.slice(0, 18)].map((n) => `+ ${n}: new`), '… and 9 more; --all to list them']);
    expect(first.slice(21)).toEqual([expect.stringMatching(/^compiled 29 nodes into \.flor\/compiled: 29 new, 0 changed, 0 removed, 0 unchanged; /), '']);

    rmSync(join(rete, 'nodes/edges.yaml'));
    const all = (await compile(false, true)).split('\n');
    expect(all.slice(0, 25)).toEqual(edges.map((n) => `- ${n}: removed`));
    expect(all.slice(25)).toEqual([expect.stringMatching(/^compiled 4 nodes into \.flor\/compiled: 0 new, 0 changed, 25 removed, 4 unchanged; /), '']);
    // --json stays complete without --all.
    write('nodes/edges.yaml', edgesYaml);
    expect((JSON.parse(await compile(true)) as { added: string[] }).added).toEqual(edges);
  });

  it('writes no file when nothing changed: no entry written, no pack added', async () => {
    await compile();
    const before = age();
    const packs = packedPacks(rete);
    const out = await compile();
    expect(touched(before, entries(rete))).toEqual([]);
    expect(packedPacks(rete)).toEqual(packs);
    expect(out).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged; files: 0 written, 12 unchanged, 0 removed;/);
  });

  it("after one node's edit writes only that node's entry, into a pack of its own beside the first", async () => {
    await compile();
    const before = age();
    const [first] = packedPacks(rete);
    write('nodes/servers.yaml', SERVERS.replace('name: gamma, kind: server,', 'name: gamma, kind: server, sync: { poll_interval: 1m },'));
    const out = await compile();
    expect(touched(before, entries(rete))).toEqual(['gamma']);
    expect(packedPacks(rete)).toHaveLength(2);
    expect(packedPacks(rete)).toContain(first);
    expect(out).toMatch(/^~ gamma: agent\.json$/m);
    expect(out).toMatch(/0 new, 1 changed, 0 removed, 3 unchanged; files: 2 written, 10 unchanged, 0 removed;/);
    expect(onDisk()).toEqual(cold());
  });

  it('drops the entry of a node no longer in the rete and leaves the others where they are', async () => {
    await compile();
    const before = age();
    write(
      'nodes/servers.yaml',
      SERVERS.split('\n')
        .filter((l) => !l.includes('gamma'))
        .join('\n'),
    );
    const out = await compile();
    expect(packedIndex(rete).has('gamma')).toBe(false);
    expect(touched(before, entries(rete))).toEqual(['gamma']);
    expect(out).toMatch(/^- gamma: removed$/m);
    expect(out).toMatch(/files: 0 written, 9 unchanged, 3 removed;/);
  });

  it('without the record of the last compile (a crash), reads every entry back and still writes none that is the same', async () => {
    await compile();
    const before = age();
    const packs = packedPacks(rete);
    rmSync(join(rete, '.flor', 'cache'), { recursive: true });
    expect(await compile()).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged; files: 0 written, 12 unchanged, 0 removed;/);
    expect(touched(before, entries(rete))).toEqual([]);
    expect(packedPacks(rete)).toEqual(packs);
  });

  it('puts back a pack deleted by hand, every node of it', async () => {
    await compile();
    const good = readCompiled(rete);
    for (const pack of packedPacks(rete)) rmSync(join(compiled, pack));
    const out = await compile();
    expect(out).toMatch(/^~ alpha: agent\.json, flor\.json$/m);
    expect(out).toMatch(/0 new, 4 changed, 0 removed, 0 unchanged; files: 12 written, 0 unchanged, 0 removed;/);
    expect(readCompiled(rete)).toEqual(good);
    expect(onDisk()).toEqual(cold());
  });

  it('puts back a compiled file changed by hand inside a pack, and a digest list', async () => {
    await compile();
    const good = packedText(rete, 'beta', 'flor.json');
    editPacked(rete, 'beta', 'flor.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
    editPacked(rete, 'alpha', 'digests.json', (bytes) => bytes.toString().replace('"alpha"', '"alphb"'));
    const out = await compile();
    expect(out).toMatch(/^~ beta: flor\.json$/m);
    // A digest list put back changes none of alpha's artifacts: it is not listed, and its list alone is counted as written.
    expect(out).not.toMatch(/alpha/);
    expect(out).toMatch(/0 new, 1 changed, 0 removed, 3 unchanged; files: 3 written, 9 unchanged, 0 removed;/);
    expect(packedText(rete, 'beta', 'flor.json')).toBe(good);
    expect(onDisk()).toEqual(cold());
  });

  it('finds any pack the record names written, cut or removed since, by its size and mtime', async () => {
    await compile();
    expect(packsHold(rete, readRecord(rete)!)).toBe(true);
    // Each undone by a compile, which writes the nodes of the pack again.
    const [pack] = packedPacks(rete);
    const edits = [
      () => editPacked(rete, 'gamma', 'flor.json', (bytes) => bytes),
      () => writeFileSync(join(compiled, packedPacks(rete)[0]), Buffer.concat([readFileSync(join(compiled, packedPacks(rete)[0])), Buffer.from('more')])),
      () => writeFileSync(join(compiled, packedPacks(rete)[0]), readFileSync(join(compiled, packedPacks(rete)[0])).subarray(0, 100)),
      () => rmSync(join(compiled, packedPacks(rete)[0])),
    ];
    for (const edit of edits) {
      edit();
      expect(packsHold(rete, readRecord(rete)!)).toBe(false);
      await compile();
      expect(packsHold(rete, readRecord(rete)!)).toBe(true);
      expect(onDisk()).toEqual(cold());
    }
    expect(packedPacks(rete)).not.toContain(pack);
  });

  it('after a listen address moves, still puts back a compiled file changed by hand in a node the move does not reach', async () => {
    await compile();
    editPacked(rete, 'gamma', 'digests.json', (bytes) => bytes.toString().replace('"gamma"', '"gammb"'));
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    await compile();
    expect(JSON.parse(packedText(rete, 'gamma', 'digests.json')).node).toBe('gamma');
    expect(onDisk()).toEqual(cold());
  });

  it('after an edit the quick path does not take, still puts back a compiled file changed by hand in a node the edit does not reach', async () => {
    await compile();
    const before = age();
    editPacked(rete, 'gamma', 'digests.json', (bytes) => bytes.toString().replace('"gamma"', '"gammb"'));
    // SSH more on a server (the quick path cannot tell whether it brings a warning): every node is
    // validated and compiled again, and only alpha's sets change.
    write('nodes/servers.yaml', SERVERS.replace('services: [{ name: web, port: 443 }]', 'services: [{ name: web, port: 443 }, { name: ssh, port: 22 }]'));
    const out = await compile();
    expect(out).toMatch(/^~ alpha: flor\.json$/m);
    // A digest list put back changes none of gamma's artifacts: it is not listed.
    expect(out).not.toMatch(/gamma/);
    expect(onDisk()).toEqual(cold());
    // Nothing else was written: the other nodes' entries were read back, checked and found the same.
    expect(touched(before, entries(rete))).toEqual(['alpha', 'gamma']);
    // And with every pack as the record says, the same edit back writes alpha's entry alone, reading no other.
    const then = age();
    write('nodes/servers.yaml', SERVERS);
    expect(await compile()).toMatch(/^~ alpha: flor\.json$/m);
    expect(touched(then, entries(rete))).toEqual(['alpha']);
    expect(onDisk()).toEqual(cold());
  });

  it('repairs a compiled file edited by hand that the pack stamps missed, once publish or plan has found it stale', async () => {
    await compile();
    const good = packedText(rete, 'beta', 'flor.json');
    const id = packedIndex(rete).get('beta')!.pack;
    editPacked(rete, 'beta', 'flor.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
    // An edit the stamp does not show (a clock set back, a file system with coarse times): the record takes the pack as it is now.
    const path = join(rete, '.flor', 'cache', 'compiled.v8');
    const record = deserialize(readFileSync(path)) as { packs: Map<string, string> };
    const { size, mtimeMs } = statSync(join(compiled, `pack-${id}`));
    record.packs.set(id, `${size}:${mtimeMs}`);
    writeFileSync(path, serialize(record));
    // The record still says beta is as compiled, and the pack has its stamp: this compile trusts it.
    await compile();
    let stale: unknown;
    try {
      loadCompiledTree(rete);
    } catch (e) {
      stale = e;
    }
    expect(stale).toBeInstanceOf(RetectlError);
    expect((stale as RetectlError).code).toBe('stale_compile');
    const out = await compile();
    expect(packedText(rete, 'beta', 'flor.json')).toBe(good);
    expect(out).toMatch(/^~ beta: flor\.json$/m);
    expect(loadCompiledTree(rete).tree.size).toBe(4);
  });

  it('reports a problem in a file it did not parse again at the same line and column', async () => {
    write('nodes/extra.yaml', 'nodes:\n  - name: delta\n    kind: server\n    listen: 10.0.0.4:7946\n    services:\n      - { name: dns, port: 53 }\n');
    await compile();
    const first = stderr.join('');
    expect(first).toMatch(/^nodes\/extra\.yaml:6:9: .*\[unused_service\]$/m);
    await compile();
    expect(stderr.join('')).toBe(first);
  });

  it('takes an unreadable parse cache entry for a miss', async () => {
    await compile();
    const parsed = join(rete, '.flor', 'cache', 'parsed');
    const cached = readdirSync(parsed);
    expect(cached).toHaveLength(Object.keys(EXAMPLE_RETE).length);
    for (const e of cached) writeFileSync(join(parsed, e), 'not a serialised value');
    const before = age();
    const out = await compile();
    expect(out).toMatch(/4 unchanged;/);
    expect(touched(before, entries(rete))).toEqual([]);
  });

  it('answers --json with the nodes and the files it changed', async () => {
    const json = JSON.parse(await compile(true));
    expect(json).toEqual({
      added: ['alpha', 'beta', 'gamma', 'laptop'],
      changed: [],
      removed: [],
      unchanged: [],
      files: { written: 12, unchanged: 0, removed: 0 },
      seconds: expect.any(Number),
    });
  });

  /** What a compile from nothing writes for the rete as it is now: every node's artifacts and digest list. */
  const cold = (): Map<string, string> => {
    const { rete: checked } = validateRete(readSources(rete), sourceReader(rete));
    const want = new Map<string, string>();
    for (const [node, files] of compileRete(checked!)) {
      for (const [name, content] of files) want.set(`${node}/${name}`, Buffer.from(content).toString('base64'));
      want.set(`${node}/digests.json`, Buffer.from(digestsJsonText(node, files)).toString('base64'));
    }
    return want;
  };
  /** Each node's set digest, worked out from its files. */
  const worked = (tree: ReturnType<typeof loadCompiledTree>['tree']) =>
    new Map([...tree].map(([node, files]) => [node, localSetDigest(new Map([...files].map(([name, content]) => [name, sha256Hex(content)])))]));
  /** Every file of every node's entry, as `<node>/<name>`, read from the packs apart from retectl's reader. */
  const onDisk = (): Map<string, string> => {
    const files = new Map<string, string>();
    for (const node of packedIndex(rete).keys()) for (const [name, bytes] of packedNode(rete, node)) files.set(`${node}/${name}`, bytes.toString('base64'));
    return files;
  };

  it("moves a tree an earlier retectl compiled (a folder a node) into a pack, reporting no node changed, and removes its folders and a stopped write's staging", async () => {
    await compile();
    // The layout of an earlier retectl, whose record this one does not read: each node's files in a folder of its own.
    const nodes = [...packedIndex(rete).keys()];
    const sets = nodes.map((node) => [node, packedNode(rete, node)] as const);
    for (const file of readdirSync(compiled)) rmSync(join(compiled, file));
    for (const [node, set] of sets) {
      mkdirSync(join(compiled, node));
      for (const [name, bytes] of set) writeFileSync(join(compiled, node, name), bytes);
    }
    // And the staging folder of a new node's write that stopped halfway, which no compile renames any more.
    mkdirSync(join(compiled, '.delta.tmp-1-0123abcd'));
    rmSync(join(rete, '.flor', 'cache'), { recursive: true });
    // Plan and publish take it as it is until then, and find it stale as they would have.
    const { rete: checked } = validateRete(readSources(rete));
    expect(loadCompiledTree(rete).tree).toEqual(compileRete(checked!));
    expect(loadPublishable(rete).tree.names()).toEqual(nodes.sort());
    writeFileSync(join(compiled, 'gamma', 'agent.json'), '{}\n');
    expect(() => loadCompiledTree(rete)).toThrow(expect.objectContaining({ code: 'stale_compile', message: expect.stringContaining('gamma') }));
    writeFileSync(join(compiled, 'gamma', 'agent.json'), sets.find(([n]) => n === 'gamma')![1].get('agent.json')!);
    const out = await compile();
    expect(out).toMatch(/^compiled 4 nodes into \.flor\/compiled: 0 new, 0 changed, 0 removed, 4 unchanged; files: 0 written, 12 unchanged, 0 removed;/m);
    expect(readdirSync(compiled).sort()).toEqual(['index', ...packedPacks(rete)]);
    expect(readCompiled(rete)).toEqual(compileRete(checked!));
    expect(onDisk()).toEqual(cold());
  });

  it("after a node's listen address moves, rewrites its flor.json and those of the nodes that name it among their peers, as a compile from nothing would", async () => {
    await compile();
    const before = age();
    // Taken without parsing or validating the files that did not change: their parse cache entries are not even read.
    const unread = spoilOtherEntries();
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    const out = await compile();
    // beta is in group ops, which reaches alpha:web: alpha names beta among its peers; gamma and laptop do not.
    expect(touched(before, entries(rete))).toEqual(['alpha', 'beta']);
    expect(out).toMatch(/0 new, 2 changed, 0 removed, 2 unchanged; files: 4 written, 8 unchanged, 0 removed;/);
    expect(onDisk()).toEqual(cold());
    unread();
  });

  it("after a service's port or protocol moves, rewrites that node's flor.json alone, as a compile from nothing would", async () => {
    await compile();
    // Taken without parsing or validating the files that did not change: their parse cache entries are not even read.
    const unread = spoilOtherEntries();
    for (const services of ['{ name: web, port: 8443 }', '{ name: web, port: 8443, protocol: udp }', '{ name: web, port: 443 }']) {
      const before = age();
      write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', services));
      const out = await compile();
      expect(touched(before, entries(rete))).toEqual(['alpha']);
      expect(out).toMatch(/0 new, 1 changed, 0 removed, 3 unchanged; files: 2 written, 10 unchanged, 0 removed;/);
      expect(onDisk()).toEqual(cold());
    }
    unread();
  });

  it("after a node's own sync block changes, comes or goes, rewrites its agent.json alone, merged over the defaults as a compile from nothing would", async () => {
    await compile();
    const unread = spoilOtherEntries();
    const blocks = [
      // Its own poll interval, the defaults' splay: 30 s.
      'sync: { poll_interval: 2m }',
      'sync: { poll_interval: 2m, watch: false }',
      'sync: { confirm_within: 2m, health_checks: [{ name: web, http: "https://127.0.0.1/health" }] }',
      // The same values written otherwise: the same bytes, nothing written.
      'sync: { confirm_within: 120s, health_checks: [{ name: web, http: "https://127.0.0.1/health" }] }',
      // Gone again: the defaults' alone.
      '',
    ];
    for (const [i, block] of blocks.entries()) {
      const before = age();
      write('nodes/servers.yaml', SERVERS.replace('tags: [web],', `tags: [web],${block ? ` ${block},` : ''}`));
      const out = await compile();
      const same = i === 3;
      expect([block, touched(before, entries(rete))]).toEqual([block, same ? [] : ['alpha']]);
      expect(out).toMatch(same ? /0 changed, 0 removed, 4 unchanged;/ : /^~ alpha: agent\.json$/m);
      expect([block, onDisk()]).toEqual([block, cold()]);
    }
    unread();
  });

  it('in a rete without a defaults block, takes a sync block edit as a compile from nothing does, and refuses what does not validate', async () => {
    const withoutDefaults = EXAMPLE_RETE['rete.yaml'].replace(/^defaults:\n(?: .*\n)+/m, '');
    expect(withoutDefaults).not.toMatch(/^defaults:/m);
    write('rete.yaml', withoutDefaults);
    await compile();
    const unread = spoilOtherEntries();
    for (const block of ['sync: { poll_interval: 2m, splay: 10s }', 'sync: { watch: false }', '']) {
      const before = age();
      write('nodes/servers.yaml', SERVERS.replace('tags: [web],', `tags: [web],${block ? ` ${block},` : ''}`));
      const out = await compile();
      expect([block, touched(before, entries(rete))]).toEqual([block, ['alpha']]);
      expect(out).toMatch(/^~ alpha: agent\.json$/m);
      expect([block, onDisk()]).toEqual([block, cold()]);
    }
    unread();
    // With no defaults, a node's health checks still need its own window; the error is where they are, and nothing is written.
    const before = age();
    write('nodes/servers.yaml', SERVERS.replace('tags: [web],', 'tags: [web], sync: { health_checks: [{ name: web, tcp: "127.0.0.1:443" }] },'));
    await expect(compile()).rejects.toThrow(/does not validate/);
    expect(stderr.join('')).toMatch(/^nodes\/servers\.yaml:2:\d+: .*\[bad_health_check\]$/m);
    expect(touched(before, entries(rete))).toEqual([]);
  });

  it('after a sync block is edited so that it does not validate, or with a record that lacks the defaults, compiles in full', async () => {
    await compile();
    // Longer than the defaults' 5m poll interval: refused, where it is, and nothing written.
    const before = age();
    write('nodes/servers.yaml', SERVERS.replace('tags: [web],', 'tags: [web], sync: { splay: 10m },'));
    await expect(compile()).rejects.toThrow(/does not validate/);
    expect(stderr.join('')).toMatch(/^nodes\/servers\.yaml:2:\d+: .*splay "10m" is longer than the poll interval "5m".*\[splay_too_long\]$/m);
    // Health checks with no window to run under.
    write('nodes/servers.yaml', SERVERS.replace('tags: [web],', 'tags: [web], sync: { health_checks: [{ name: web, tcp: "127.0.0.1:443" }] },'));
    await expect(compile()).rejects.toThrow(/does not validate/);
    expect(stderr.join('')).toMatch(/\[bad_health_check\]$/m);
    expect(touched(before, entries(rete))).toEqual([]);
    // A record from a retectl that did not keep the defaults: the edit is compiled in full, which keeps them.
    write('nodes/servers.yaml', SERVERS);
    await compile();
    const path = join(rete, '.flor', 'cache', 'compiled.v8');
    const record = deserialize(readFileSync(path)) as { rete: Record<string, unknown> };
    expect(record.rete.defaults).toEqual({ sync: { poll_interval: '5m', splay: '30s' } });
    delete record.rete.defaults;
    writeFileSync(path, serialize(record));
    write('nodes/servers.yaml', SERVERS.replace('tags: [web],', 'tags: [web], sync: { poll_interval: 2m },'));
    expect(await compile()).toMatch(/^~ alpha: agent\.json$/m);
    expect(onDisk()).toEqual(cold());
    // A quick recompile would have carried the record's rete over as it was.
    expect(readRecord(rete)?.rete?.defaults).toEqual({ sync: { poll_interval: '5m', splay: '30s' } });
  });

  it("after a service moves to SSH's port or onto another service's, compiles in full: the warning, or the error, as a compile from nothing gives it", async () => {
    write('rete.yaml', EXAMPLE_RETE['rete.yaml'].replace(/^ {2}safety_net: .*\n/m, ''));
    write('policy.yaml', `${EXAMPLE_RETE['policy.yaml']}  - from: [group:ops]\n    to: [alpha:metrics]\n`);
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', '{ name: web, port: 443 }, { name: metrics, port: 9100 }'));
    await compile();
    // No diagnostic in the file edited next: the quick path would take a move of its addresses.
    expect(stderr.join('')).toBe('');
    // Port 22 makes alpha's metrics SSH, on a server of a mesh with no safety net.
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', '{ name: web, port: 443 }, { name: metrics, port: 22 }'));
    await compile();
    expect(stderr.join('')).toMatch(/^nodes\/servers\.yaml:2:.*server "alpha" publishes SSH \(service "metrics", port 22\).*\[no_safety_net\]$/m);
    expect(onDisk()).toEqual(cold());
    // Back, with no diagnostic again; then onto the web service's port: refused, and nothing written.
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', '{ name: web, port: 443 }, { name: metrics, port: 9100 }'));
    await compile();
    expect(stderr.join('')).toBe('');
    const before = age();
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', '{ name: web, port: 443 }, { name: metrics, port: 443 }'));
    await expect(compile()).rejects.toThrow(/does not validate/);
    expect(stderr.join('')).toMatch(/\[duplicate_port\]/);
    expect(touched(before, entries(rete))).toEqual([]);
  });

  it('after a change to a mesh-wide setting, recompiles every node it reaches', async () => {
    await compile();
    write('rete.yaml', EXAMPLE_RETE['rete.yaml'].replace('poll_interval: 5m', 'poll_interval: 2m'));
    const out = await compile();
    for (const node of ['alpha', 'beta', 'gamma', 'laptop']) expect(out).toMatch(new RegExp(`^~ ${node}: agent\\.json$`, 'm'));
    expect(onDisk()).toEqual(cold());
    write('rete.yaml', EXAMPLE_RETE['rete.yaml'].replace('coordinator.example.net', 'coordinator.example.org'));
    expect(await compile()).toMatch(/0 new, 4 changed, 0 removed, 0 unchanged;/);
    expect(onDisk()).toEqual(cold());
  });

  it('after an edit of a file that holds a warning about another node, which stays where it was, takes the quick path and gives the warning as before', async () => {
    const warned = SERVERS.replace('tags: [backend] }', 'tags: [backend], services: [{ name: dns, port: 53 }] }');
    write('nodes/servers.yaml', warned);
    await compile();
    const warning = /^nodes\/servers\.yaml:3:\d+: .*beta:dns.*\[unused_service\]$/m;
    expect(stderr.join('')).toMatch(warning);
    const unread = spoilOtherEntries();
    const before = age();
    write('nodes/servers.yaml', warned.replace('10.0.0.3:7946', '10.0.0.3:7000'));
    await compile();
    expect(stderr.join('')).toMatch(warning);
    expect(touched(before, entries(rete))).toEqual(['gamma']);
    expect(onDisk()).toEqual(cold());
    unread();
    // A comment above it moves it a line down: still the quick path, which says where it now is.
    write('nodes/servers.yaml', `# the servers\n${warned}`);
    await compile();
    expect(stderr.join('')).toMatch(/^nodes\/servers\.yaml:4:\d+: .*beta:dns.*\[unused_service\]$/m);
    unread();
    expect(onDisk()).toEqual(cold());
    // And a compile from nothing says the same.
    rmSync(join(rete, '.flor'), { recursive: true });
    const quick = stderr.join('');
    await compile();
    expect(stderr.join('')).toBe(quick);
  });

  it("after a service is added, takes the quick path: that node's flor.json alone, and the warning nothing reaching it brings, where it is", async () => {
    await compile();
    expect(stderr.join('')).toBe('');
    const unread = spoilOtherEntries();
    const before = age();
    const dns = '{ name: web, port: 443 }, { name: dns, port: 53 }';
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', dns));
    expect(await compile()).toMatch(/^~ alpha: flor\.json$/m);
    expect(stderr.join('')).toMatch(
      /^nodes\/servers\.yaml:2:\d+: nodes\[0\]\.services\[1\]: warning: no ACL rule allows anyone to reach alpha:dns \[unused_service\]$/m,
    );
    expect(touched(before, entries(rete))).toEqual(['alpha']);
    unread();
    expect(onDisk()).toEqual(cold());
    // Renamed, then moved in front of web: the warning follows it.
    write('nodes/servers.yaml', SERVERS.replace('{ name: web, port: 443 }', '{ name: resolver, port: 53 }, { name: web, port: 443 }'));
    await compile();
    expect(stderr.join('')).toMatch(/^nodes\/servers\.yaml:2:\d+: nodes\[0\]\.services\[0\]: warning: .*alpha:resolver \[unused_service\]$/m);
    unread();
    expect(onDisk()).toEqual(cold());
    // Removed again: no warning, alpha's flor.json as it was, and the record says so to the next compile.
    write('nodes/servers.yaml', SERVERS);
    expect(await compile()).toMatch(/^~ alpha: flor\.json$/m);
    expect(stderr.join('')).toBe('');
    unread();
    expect(onDisk()).toEqual(cold());
    expect(await compile()).toMatch(/0 changed, 0 removed, 4 unchanged;/);
    expect(stderr.join('')).toBe('');
    // web, which a rule names, removed: validated in full, refused where the rule is, and nothing written.
    const then = age();
    write('nodes/servers.yaml', SERVERS.replace('services: [{ name: web, port: 443 }]', 'services: [{ name: www, port: 443 }]'));
    await expect(compile()).rejects.toThrow(/does not validate/);
    expect(stderr.join('')).toMatch(/^policy\.yaml:\d+:\d+: .*node "alpha" publishes no service "web" \(it publishes www\) \[unknown_service\]$/m);
    expect(touched(then, entries(rete))).toEqual([]);
  });

  it('after an edit of the node a warning is about, takes the quick path, and the warning says what it now does', async () => {
    write('rete.yaml', EXAMPLE_RETE['rete.yaml'].replace(/^ {2}safety_net: .*\n/m, ''));
    const ssh = (port: number) => SERVERS.replace('{ name: web, port: 443 }', `{ name: web, port: 443 }, { name: ssh, port: ${port} }`);
    write('nodes/servers.yaml', ssh(2222));
    await compile();
    expect(stderr.join('')).toMatch(/server "alpha" publishes SSH \(service "ssh", port 2222\).*\[no_safety_net\]$/m);
    const unread = spoilOtherEntries();
    write('nodes/servers.yaml', ssh(2223));
    await compile();
    const warnings = stderr.join('');
    // Both of ssh's warnings, at one place: in validation's order, by code.
    expect(warnings.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(
        /^nodes\/servers\.yaml:2:\d+: nodes\[0\]\.services\[1\]: warning: server "alpha" publishes SSH \(service "ssh", port 2223\).*\[no_safety_net\]$/,
      ),
      expect.stringMatching(/^nodes\/servers\.yaml:2:\d+: nodes\[0\]\.services\[1\]: warning: .*alpha:ssh \[unused_service\]$/),
    ]);
    unread();
    expect(onDisk()).toEqual(cold());
    rmSync(join(rete, '.flor'), { recursive: true });
    await compile();
    expect(stderr.join('')).toBe(warnings);
  });

  it('after a port moves in services an alias lists on another node, prints the warnings of one place in the order a compile from nothing does', async () => {
    // gw2's services are gw1's: both of gw2's unused_service warnings are placed where the alias is, and
    // validation orders two warnings of one place and one code by their text (gw2:dns before gw2:web).
    const gateways = (dns: number) =>
      `${SERVERS}  - name: gw1\n    kind: device\n    listen: 10.0.0.5:7946\n    services: &edge\n      - { name: web, port: 80 }\n      - { name: dns, port: ${dns} }\n` +
      '  - name: gw2\n    kind: device\n    listen: 10.0.0.6:7946\n    services: *edge\n';
    write('nodes/servers.yaml', gateways(53));
    await compile();
    const unread = spoilOtherEntries();
    write('nodes/servers.yaml', gateways(5353));
    expect(await compile()).toMatch(/^~ gw2: flor\.json$/m);
    // The quick path took it.
    unread();
    expect(onDisk()).toEqual(cold());
    const warnings = validateRete(readSources(rete), sourceReader(rete)).diagnostics.map((d) => `${formatDiagnostic(d)}\n`);
    expect(warnings.filter((w) => w.includes('gw2:'))).toEqual([
      expect.stringMatching(/^nodes\/servers\.yaml:14:15: nodes\[4\]\.services\[1\]: .*gw2:dns \[unused_service\]\n$/),
      expect.stringMatching(/^nodes\/servers\.yaml:14:15: nodes\[4\]\.services\[0\]: .*gw2:web \[unused_service\]\n$/),
    ]);
    expect(stderr.join('')).toEqual(warnings.join(''));
  });

  it('after a listen address moves in a file that also changed otherwise, compiles in full; when it moves a warning, says where it now is', async () => {
    await compile();
    // A move and a peer granted in the same edit: laptop's and gamma's peers change too.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.1:7946', '10.0.0.1:7000').replace('tags: [backend] }\n', 'tags: [backend, web] }\n'));
    write('policy.yaml', `${EXAMPLE_RETE['policy.yaml']}  - from: [tag:web]\n    to: [alpha:web]\n`);
    await compile();
    expect(onDisk()).toEqual(cold());
    write('nodes/extra.yaml', 'nodes:\n  - name: delta\n    kind: server\n    listen: 10.0.0.4:7946\n    services:\n      - { name: dns, port: 53 }\n');
    await compile();
    expect(stderr.join('')).toMatch(/^nodes\/extra\.yaml:6:9: .*\[unused_service\]$/m);
    // The move comes with a line more above the warning: it is reported where it now is.
    write('nodes/extra.yaml', 'nodes:\n  - name: delta\n    kind: server\n\n    listen: 10.0.0.4:7000\n    services:\n      - { name: dns, port: 53 }\n');
    await compile();
    expect(stderr.join('')).toMatch(/^nodes\/extra\.yaml:7:9: .*\[unused_service\]$/m);
    expect(onDisk()).toEqual(cold());
  });

  it('after a run of edits of every kind, each compile writes what a compile from nothing would', async () => {
    // Three sites of eight nodes; each site's monitor reaches every node's metrics, its web servers its databases.
    const site = (s: number, port: (i: number) => number, extra = '') => {
      const lines = ['nodes:'];
      for (let i = 0; i < 8; i++) {
        const role = i === 0 ? 'monitor' : i < 3 ? 'db' : 'web';
        lines.push(
          `  - { name: s${s}-n${i}, kind: server, listen: 10.0.${s}.${i}:${port(i)}, tags: [${role}, s${s}-${role}], services: [{ name: metrics, port: 9100 }] }`,
        );
      }
      lines.push('acl:', `  - from: [tag:s${s}-monitor, tag:db]`, `    to: [${[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `s${s}-n${i}:metrics`).join(', ')}]`);
      return `${lines.join('\n')}\n${extra}`;
    };
    for (const s of [1, 2, 3])
      write(
        `sites/s${s}.yaml`,
        site(s, () => 7946),
      );
    await compile();
    expect(onDisk()).toEqual(cold());
    const edits: [string, () => void][] = [
      [
        'a web server moves',
        () =>
          write(
            'sites/s1.yaml',
            site(1, (i) => (i === 5 ? 8000 : 7946)),
          ),
      ],
      [
        'a monitor moves',
        () =>
          write(
            'sites/s2.yaml',
            site(2, (i) => (i === 0 ? 8001 : 7946)),
          ),
      ],
      [
        'a database moves: every site names it',
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 1 ? 8002 : 7946)),
          ),
      ],
      [
        'two nodes in two files move',
        () => (
          write(
            'sites/s1.yaml',
            site(1, (i) => (i < 2 ? 8003 : 7946)),
          ),
          write(
            'sites/s2.yaml',
            site(2, () => 7946),
          )
        ),
      ],
      ['a comment only', () => write('sites/s3.yaml', `# site three\n${site(3, (i) => (i === 1 ? 8002 : 7946))}`)],
      [
        "a web server's own sync block, and its monitor's with its own listen address",
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 0 ? 8005 : i === 1 ? 8002 : 7946))
              .replace('name: s3-n5, kind: server,', 'name: s3-n5, kind: server, sync: { poll_interval: 1m, watch: false },')
              .replace('name: s3-n0, kind: server,', 'name: s3-n0, kind: server, sync: { splay: 1m },'),
          ),
      ],
      [
        "a database's sync block while a monitor it names among its peers moves",
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 0 ? 8006 : i === 1 ? 8002 : 7946)).replace(
              'name: s3-n1, kind: server,',
              'name: s3-n1, kind: server, sync: { poll_interval: 10m },',
            ),
          ),
      ],
      ['a metrics port moves', () => write('sites/s3.yaml', site(3, (i) => (i === 1 ? 8002 : 7946)).replace('port: 9100', 'port: 9101'))],
      [
        'a metrics port and a listen address move at once, in one node and in two',
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 1 || i === 4 ? 8002 : 7946))
              .replace('port: 9100', 'port: 9102, protocol: udp')
              .replace(/(s3-n4.*?)port: 9100/, '$1port: 9103'),
          ),
      ],
      [
        'a service more in one node, a listen address moved in another',
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 1 ? 8007 : 7946)).replace(/(s3-n4.*?)port: 9100 }/, '$1port: 9100 }, { name: dns, port: 53, protocol: udp }'),
          ),
      ],
      [
        'that service renamed and moved in front',
        () =>
          write(
            'sites/s3.yaml',
            site(3, (i) => (i === 1 ? 8007 : 7946)).replace(
              /(s3-n4.*?)\{ name: metrics, port: 9100 }/,
              '$1{ name: resolver, port: 53 }, { name: metrics, port: 9100 }',
            ),
          ),
      ],
      [
        'moved back',
        () =>
          write(
            'sites/s3.yaml',
            site(3, () => 7946),
          ),
      ],
      ['a mesh-wide default', () => write('rete.yaml', EXAMPLE_RETE['rete.yaml'].replace('splay: 30s', 'splay: 10s'))],
      [
        'a rule more',
        () =>
          write(
            'sites/s2.yaml',
            site(2, () => 7946, '  - from: [s1-n3]\n    to: [s2-n4:metrics]\n'),
          ),
      ],
      [
        'a tag more: the labels change',
        () =>
          write(
            'sites/s3.yaml',
            site(3, () => 7946).replace(
              'name: s3-n3, kind: server, listen: 10.0.3.3:7946, tags: [web, s3-web]',
              'name: s3-n3, kind: server, listen: 10.0.3.3:7946, tags: [web, s3-web, canary]',
            ),
          ),
      ],
      [
        'a move where that rule reaches',
        () =>
          write(
            'sites/s1.yaml',
            site(1, (i) => (i === 3 ? 8004 : 7946)),
          ),
      ],
      [
        'a node removed',
        () =>
          write(
            'sites/s3.yaml',
            site(3, () => 7946)
              .replace(/^ {2}- \{ name: s3-n7.*\n/m, '')
              .replace(', s3-n7:metrics', ''),
          ),
      ],
      [
        'a move and its own peers at once',
        () =>
          write(
            'sites/s2.yaml',
            site(2, (i) => 7946 + i, '  - from: [s1-n3]\n    to: [s2-n4:metrics]\n'),
          ),
      ],
    ];
    for (const [what, edit] of edits) {
      edit();
      await compile();
      expect([what, onDisk()]).toEqual([what, cold()]);
      // The warnings a compile from nothing gives, in its order and at its places.
      const warnings = validateRete(readSources(rete), sourceReader(rete)).diagnostics.map((d) => `${formatDiagnostic(d)}\n`);
      expect([what, stderr.join('')]).toEqual([what, warnings.join('')]);
      // And the record the next publish takes its set digests, buckets and label buckets from.
      const { rete: validated, tree, heads } = loadCompiledTree(rete);
      expect([what, setsOf(heads), heads?.buckets, heads?.labels]).toEqual([
        what,
        worked(tree),
        headBuckets(worked(tree)),
        labelBuckets(nodeLabels(validated)),
      ]);
      // And what the next publish takes from the rete without validating it.
      const { rete: recorded } = loadPublishable(rete);
      expect([what, recorded.coordinator, recorded.rollout, recorded.labels.all()]).toEqual([
        what,
        validated.mesh.coordinator,
        validated.rollout,
        Object.fromEntries(nodeLabels(validated)),
      ]);
    }
  });

  it("gives publish the rete's coordinator, rollout block and labels as the compile validated them, and its nodes and groups when asked", async () => {
    const rollout = EXAMPLE_RETE['rete.yaml'].replace('# rollout: { canary', 'rollout: { canary');
    expect(rollout).not.toBe(EXAMPLE_RETE['rete.yaml']);
    write('rete.yaml', rollout);
    const expected = () => {
      const { rete: validated } = loadCompiledTree(rete);
      return {
        coordinator: validated.mesh.coordinator,
        rollout: validated.rollout,
        labels: Object.fromEntries(nodeLabels(validated)),
        nodes: validated.nodes,
        groups: validated.groups,
      };
    };
    const given = () => {
      const { rete: r } = loadPublishable(rete);
      const labels = r.labels.all();
      // Asked node by node as asked whole; nothing for a node the tree does not hold.
      for (const node of Object.keys(labels)) expect(r.labels.of(node)).toEqual(labels[node]);
      expect(r.labels.of('no-such-node')).toBeUndefined();
      return { coordinator: r.coordinator, rollout: r.rollout, labels, nodes: r.nodes, groups: r.groups };
    };
    await compile();
    const first = expected();
    expect(first.rollout?.plan).toEqual({ canary: ['laptop'], waves: [50, 100], bake_seconds: 600 });
    expect(Object.values(first.labels).some((l) => l.groups.length > 0)).toBe(true);
    expect(given()).toEqual(first);
    // A listen address moved (the quick path, which validates nothing): still the same.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    expect(await compile()).toMatch(/2 changed/);
    expect(given()).toEqual(expected());
    // A tag dropped and the coordinator moved: a full compile, and publish sees both.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947').replace('tags: [web]', 'tags: []'));
    write('rete.yaml', rollout.replace('coordinator.example.net', 'coordinator.example.org'));
    await compile();
    const after = given();
    expect(after).toEqual(expected());
    expect(after.coordinator).toMatch(/coordinator\.example\.org/);
    expect(after.labels.alpha).toEqual({ tags: [], groups: first.labels.alpha.groups });
    // A record from before publish's view of the rete was kept: validated, as before.
    const path = join(rete, '.flor', 'cache', 'compiled.v8');
    const { rete: _kept, ...older } = deserialize(readFileSync(path)) as Record<string, unknown>;
    writeFileSync(path, serialize(older));
    expect(readRecord(rete)?.rete).toBeUndefined();
    expect(given()).toEqual(expected());
    // And the next compile, of a moved listen address alone, is a full one, which keeps it again.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7948').replace('tags: [web]', 'tags: []'));
    await compile();
    expect(readRecord(rete)?.rete).toEqual(expect.objectContaining({ coordinator: after.coordinator }));
    expect(given()).toEqual(expected());
  });

  it('gives publish the set digests it recorded, only while the YAML is what it compiled and the tree what it wrote', async () => {
    await compile();
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    await compile();
    const loaded = loadCompiledTree(rete);
    expect(setsOf(loaded.heads)).toEqual(worked(loaded.tree));
    expect(loaded.heads?.buckets).toEqual(headBuckets(worked(loaded.tree)));
    // A bucket's nodes are those whose name's md5 puts them there, and a node's set digest is the same asked alone.
    for (let b = 0; b < HEAD_BUCKETS; b++) {
      const members = loaded.heads!.inBuckets(new Set([b]));
      expect(members.every(([n]) => bucketOf(n) === b)).toBe(true);
      for (const [n, set] of members) expect(loaded.heads!.setOf(n)).toBe(set);
    }
    expect(loaded.heads!.setOf('no-such-node')).toBeUndefined();
    for (const [node, set] of worked(loaded.tree)) expect(JSON.parse(packedText(rete, node, 'digests.json')).set_digest).toBe(set);
    // The same tree from YAML the record was not made from: worked out again.
    write('nodes/servers.yaml', `# a comment\n${SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947')}`);
    expect(loadCompiledTree(rete).heads).toBeUndefined();
    // A file edited by hand since: stale, whatever the record says.
    await compile();
    expect(loadCompiledTree(rete).heads).toBeDefined();
    editPacked(rete, 'gamma', 'agent.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
    expect(() => loadCompiledTree(rete)).toThrow(expect.objectContaining({ code: 'stale_compile' }));
  });

  it('keeps the node lines and the labels in files of their own: a publish reads the lines of its buckets alone, and a file of another compile is never taken', async () => {
    await compile();
    const cache = join(rete, '.flor', 'cache');
    const nodesFile = join(compiled, 'index');
    const labelsFile = join(cache, 'compiled.labels');
    const whole = loadCompiledTree(rete);
    const expected = worked(whole.tree);
    // Each bucket's nodes read off the record's index equal the whole tree's, bucket by bucket and in name order.
    for (let b = 0; b < HEAD_BUCKETS; b++) {
      const members = loadPublishable(rete)
        .tree.heads()
        .inBuckets(new Set([b]));
      expect(members).toEqual([...expected].filter(([n]) => bucketOf(n) === b).sort(([x], [y]) => (x < y ? -1 : 1)));
    }
    // Only the lines asked for are read: gamma's line spoilt in place (same length), alpha's bucket still reads right, gamma's shows it.
    const text = readFileSync(nodesFile, 'latin1');
    const gammaSet = expected.get('gamma')!;
    const spoilt = 'x'.repeat(gammaSet.length);
    writeFileSync(nodesFile, text.replace(` ${gammaSet} ${bucketOf('gamma')}\n`, ` ${spoilt} ${bucketOf('gamma')}\n`), 'latin1');
    expect(bucketOf('alpha')).not.toBe(bucketOf('gamma'));
    expect(
      loadPublishable(rete)
        .tree.heads()
        .inBuckets(new Set([bucketOf('alpha')])),
    ).toContainEqual(['alpha', expected.get('alpha')]);
    expect(
      loadPublishable(rete)
        .tree.heads()
        .inBuckets(new Set([bucketOf('gamma')])),
    ).toContainEqual(['gamma', spoilt]);
    writeFileSync(nodesFile, text, 'latin1');
    expect(loadPublishable(rete).fromRecord).toBe(true);

    // Node lines of another generation (a compile stopped between its writes): no record, and publish validates again.
    const generation = text.slice(0, 16);
    const other = generation.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    writeFileSync(nodesFile, other + text.slice(16), 'latin1');
    expect(readRecord(rete)).toBeUndefined();
    expect(loadPublishable(rete).fromRecord).toBe(false);
    writeFileSync(nodesFile, text, 'latin1');
    expect(readRecord(rete)).toBeDefined();
    // Labels of another generation: the record's tree stands, the rete is validated again.
    const labels = readFileSync(labelsFile, 'utf8');
    expect(labels.startsWith(generation)).toBe(true);
    writeFileSync(labelsFile, other + labels.slice(16));
    expect(readRecord(rete)?.rete).toBeUndefined();
    expect(loadPublishable(rete).fromRecord).toBe(false);
    writeFileSync(labelsFile, labels);
    expect(readRecord(rete)?.rete?.labels).toBe(labels.slice(16));

    // Replaced by another compile after the record was read: refused when read, never taken for this record's.
    const held = readRecord(rete)!;
    writeFileSync(nodesFile, other + text.slice(16), 'latin1');
    writeFileSync(labelsFile, other + labels.slice(16));
    expect(() => held.nodes.names()).toThrow(expect.objectContaining({ code: 'stale_compile' }));
    expect(() => held.rete!.labels).toThrow(expect.objectContaining({ code: 'stale_compile' }));
    // The next compile reads every node back and writes a whole record again.
    expect(await compile()).toMatch(/0 changed/);
    expect(readRecord(rete)?.nodes.size).toBe(expected.size);
    expect(loadPublishable(rete).fromRecord).toBe(true);
  });

  it("writes none of the record's files when nothing changed, and a quick recompile keeps the labels' file it read", async () => {
    await compile();
    // The YAML settled and its stamps kept (see the YAML stamps test): from here, a compile that changes nothing writes nothing.
    await settle();
    await compile();
    const cache = join(rete, '.flor', 'cache');
    const [v8File, labelsFile] = ['compiled.v8', 'compiled.labels'].map((f) => join(cache, f));
    const nodesFile = join(compiled, 'index');
    const read = (f: string) => ({ bytes: readFileSync(f), mtime: statSync(f, { bigint: true }).mtimeNs });
    const recordFiles = () => ({ v8: read(v8File), nodes: read(nodesFile), labels: read(labelsFile) });
    /** The record's three files, their mtimes set into the past first, so that any write shows. */
    const aged = () => {
      const past = new Date('2001-01-01T00:00:00Z');
      for (const f of [v8File, nodesFile, labelsFile]) utimesSync(f, past, past);
      return recordFiles();
    };
    const generationOf = (bytes: Buffer) => bytes.toString('latin1', 0, 16);
    const validatedLabels = () => Object.fromEntries(nodeLabels(loadCompiledTree(rete).rete));
    const publishable = () => {
      const p = loadPublishable(rete);
      return { fromRecord: p.fromRecord, labels: p.rete.labels.all() };
    };

    // Nothing changed: not one of them written.
    let before = aged();
    expect(await compile()).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged/);
    expect(recordFiles()).toEqual(before);

    // A listen address moved (the quick path): the node lines and compiled.v8 written, the labels' file
    // left as it was, byte for byte, and the record still gives publish the labels the compile validated.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    before = aged();
    expect(await compile()).toMatch(/2 changed/);
    expect(read(labelsFile)).toEqual(before.labels);
    expect(read(nodesFile).mtime).not.toBe(before.nodes.mtime);
    expect(read(v8File).mtime).not.toBe(before.v8.mtime);
    expect(generationOf(read(nodesFile).bytes)).not.toBe(generationOf(before.labels.bytes));
    expect(publishable()).toEqual({ fromRecord: true, labels: validatedLabels() });
    expect(readRecord(rete)?.rete?.labels).toBe(before.labels.bytes.toString('utf8', 16));

    // Again, then a comment added (the YAML changed, no node did): still the labels' file of the first compile.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7948'));
    expect(await compile()).toMatch(/2 changed/);
    write('nodes/servers.yaml', `# moved twice\n${SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7948')}`);
    expect(await compile()).toMatch(/0 changed, 0 removed, 4 unchanged/);
    expect(read(labelsFile)).toEqual(before.labels);
    expect(publishable()).toEqual({ fromRecord: true, labels: validatedLabels() });
    // That file of another generation: the tree stands, the rete is validated again.
    const labels = readFileSync(labelsFile);
    writeFileSync(labelsFile, Buffer.concat([Buffer.from('f'.repeat(16)), labels.subarray(16)]));
    expect(readRecord(rete)?.rete).toBeUndefined();
    expect(loadPublishable(rete).fromRecord).toBe(false);
    writeFileSync(labelsFile, labels);

    // A tag changed (one no file names, with an address: the quick path), which writes the labels anew, under the new generation.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7948').replace('tags: [web]', 'tags: [www]'));
    await compile();
    expect(generationOf(read(labelsFile).bytes)).toBe(generationOf(read(nodesFile).bytes));
    expect(read(labelsFile).bytes).not.toEqual(before.labels.bytes);
    expect(publishable()).toEqual({ fromRecord: true, labels: validatedLabels() });
    expect(validatedLabels().alpha.tags).toEqual(['www']);
  });

  it('after a tag no file names is added or removed, takes the quick path: no compiled file changes, the labels do', async () => {
    await compile();
    const labelsNow = () => {
      const { heads } = loadCompiledTree(rete);
      const { rete: recorded } = loadPublishable(rete);
      return [recorded.labels.all(), heads?.labels];
    };
    const fromNothing = () => {
      const { rete: validated } = loadCompiledTree(rete);
      return [Object.fromEntries(nodeLabels(validated)), labelBuckets(nodeLabels(validated))];
    };
    const unread = spoilOtherEntries();
    const before = age();
    // beta gains one, gamma loses its only one (and, in no group, its labels' line).
    write(
      'nodes/servers.yaml',
      SERVERS.replace('tags: [backend] }\n  - { name: gamma', 'tags: [backend, canary] }\n  - { name: gamma').replace(/(gamma.*), tags: \[backend\]/, '$1'),
    );
    expect(await compile()).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged; files: 0 written/);
    unread();
    expect(touched(before, entries(rete))).toEqual([]);
    expect(labelsNow()).toEqual(fromNothing());
    expect(loadPublishable(rete).rete.labels.all()).toMatchObject({ beta: { tags: ['backend', 'canary'] }, gamma: { tags: [], groups: [] } });
    expect(onDisk()).toEqual(cold());
    // And the record it wrote takes the next one too: back as it was.
    write('nodes/servers.yaml', SERVERS);
    await compile();
    unread();
    expect(labelsNow()).toEqual(fromNothing());
    // A tag an ACL rule names: who reaches alpha's web changes, so the compile is a full one.
    write('policy.yaml', `${EXAMPLE_RETE['policy.yaml']}  - from: [tag:backend]\n    to: [alpha:web]\n`);
    await compile();
    const then = age();
    write('nodes/servers.yaml', SERVERS.replace(/(gamma.*), tags: \[backend\]/, '$1'));
    expect(await compile()).toMatch(/^~ alpha: flor\.json$/m);
    expect(() => unread()).toThrow();
    expect(touched(then, entries(rete)).sort()).toEqual(['alpha', 'gamma']);
    expect(onDisk()).toEqual(cold());
    expect(labelsNow()).toEqual(fromNothing());
  });

  it('after a tag no file names is removed with its line, records the rollout block below it where it now is, as a compile from nothing does', async () => {
    // One file holds the nodes and, below them, the rollout block, whose canary names a node: no file names a tag.
    const servers = `nodes:
  - name: alpha
    kind: server
    listen: 10.0.0.1:7946
    tags: [web]
    services: [{ name: web, port: 443 }]
  - name: beta
    kind: server
    listen: 10.0.0.2:7946
    tags: [backend]
  - name: gamma
    kind: server
    listen: 10.0.0.3:7946
    tags: [owner-x]
rollout: { canary: { nodes: [gamma] }, waves: [50, 100] }
`;
    write('nodes/servers.yaml', servers);
    await compile();
    const unread = spoilOtherEntries();
    // gamma's only tag goes, and its line with it: the rollout block is a line higher.
    write('nodes/servers.yaml', servers.replace('    tags: [owner-x]\n', ''));
    expect(await compile()).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged; files: 0 written/);
    unread();
    const { rete: validated } = loadCompiledTree(rete);
    expect(validated.rollout?.place).toEqual({ file: 'nodes/servers.yaml', line: 14, col: 10 });
    // What publish takes from the record: the rollout block where validating the rete again finds it.
    expect(loadPublishable(rete).rete.rollout).toEqual(validated.rollout);
  });

  it('after as many quick recompiles as MAX_PACKS, folds their packs into the next one and stays on the quick path', async () => {
    await compile();
    const [first] = packedPacks(rete);
    const firstStamp = stampText(join(compiled, first));
    const unread = spoilOtherEntries();
    const moved = { beta: 7946, gamma: 7946 };
    for (let edit = 1; edit <= MAX_PACKS + 1; edit++) {
      // beta and gamma in turns: when the packs fold, the other's entry is in a small pack and must move.
      const node = edit % 2 === 0 ? 'beta' : 'gamma';
      moved[node] = 7000 + edit;
      write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', `10.0.0.2:${moved.beta}`).replace('10.0.0.3:7946', `10.0.0.3:${moved.gamma}`));
      const out = await compile();
      expect([edit, out]).toEqual([edit, expect.stringMatching(new RegExp(`^~ ${node}: flor\\.json$`, 'm'))]);
      // Quick: no other file parsed again.
      unread();
      expect([edit, onDisk()]).toEqual([edit, cold()]);
      // A pack more each time, until the one that would make them more than MAX_PACKS: then the first and the new one.
      const packs = readdirSync(compiled).filter((name) => name !== 'index');
      expect([edit, packs.length]).toEqual([edit, edit < MAX_PACKS ? edit + 1 : edit - MAX_PACKS + 2]);
      expect(packs).toContain(first);
      for (const named of packedPacks(rete)) expect(packs).toContain(named);
      const record = readRecord(rete);
      expect(record && packsHold(rete, record)).toBe(true);
    }
    // The first pack was never written again; the record and the tree agree: nothing to do.
    expect(stampText(join(compiled, first))).toBe(firstStamp);
    expect(await compile()).toMatch(/0 changed, 0 removed, 4 unchanged;/);
  });

  it('answers --json after a quick recompile with every node it left unchanged', async () => {
    await compile();
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    const moved = JSON.parse(await compile(true));
    expect(moved.changed.map((c: { node: string }) => c.node)).toEqual(['alpha', 'beta']);
    expect(moved.unchanged).toEqual(['gamma', 'laptop']);
    const same = JSON.parse(await compile(true));
    expect(same.changed).toEqual([]);
    expect(same.unchanged).toEqual(['alpha', 'beta', 'gamma', 'laptop']);
  });

  it("keeps the YAML files' stamps once they have settled, and takes a file's digest from the record while its stamp is the one kept", async () => {
    const yaml = ['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml'];
    const v8File = join(rete, '.flor', 'cache', 'compiled.v8');
    const nodesFile = join(compiled, 'index');
    const kept = () => readRecord(rete)?.inputs?.yamlStamps;
    const read = (f: string) => ({ bytes: readFileSync(f), mtime: statSync(f, { bigint: true }).mtimeNs });

    // The first compile has no clock yet (.flor/cache is its to make); a file changed just before a compile keeps no stamp.
    await compile();
    expect(kept()).toEqual(new Map());
    const policy = join(rete, 'policy.yaml');
    const { atime, mtime } = statSync(policy);
    utimesSync(policy, atime, mtime);
    await compile();
    expect(kept()?.has('policy.yaml')).toBe(false);

    // Settled: a compile that changes nothing keeps every file's stamp, writing compiled.v8 alone (the same generation).
    await settle();
    const nodesBefore = read(nodesFile);
    const generation = readRecord(rete)?.generation;
    expect(await compile()).toMatch(/0 new, 0 changed, 0 removed, 4 unchanged/);
    expect(kept()).toEqual(new Map(yaml.map((f) => [f, stampText(join(rete, f))])));
    expect(readRecord(rete)?.generation).toBe(generation);
    expect(read(nodesFile)).toEqual(nodesBefore);
    // And the next one writes nothing.
    const v8Before = read(v8File);
    await compile();
    expect(read(v8File)).toEqual(v8Before);

    // A file touched (its ctime moves, its bytes do not): its stamp is no longer kept, the others are.
    utimesSync(policy, atime, mtime);
    expect(await compile()).toMatch(/0 changed, 0 removed, 4 unchanged/);
    expect([...kept()!.keys()].sort()).toEqual(yaml.filter((f) => f !== 'policy.yaml'));
    expect(readRecord(rete)?.generation).toBe(generation);

    // An edit is seen by publish and by compile: its stamp is not the one kept.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7947'));
    expect(() => loadPublishable(rete)).toThrow(expect.objectContaining({ code: 'stale_compile' }));
    expect(await compile()).toMatch(/2 changed/);
    expect(loadPublishable(rete).fromRecord).toBe(true);

    // While a file's stamp is the one kept, the file is not read: a record made to keep the stamp of
    // an edit no compile saw (which settledStamps never does) hides that edit from publish and compile.
    write('nodes/servers.yaml', SERVERS.replace('10.0.0.2:7946', '10.0.0.2:7949'));
    const record = deserialize(readFileSync(v8File)) as { inputs: { yamlStamps: Map<string, string> } };
    record.inputs.yamlStamps.set('nodes/servers.yaml', stampText(join(rete, 'nodes/servers.yaml')));
    writeFileSync(v8File, serialize(record));
    expect(loadPublishable(rete).fromRecord).toBe(true);
    expect(await compile()).toMatch(/0 changed, 0 removed, 4 unchanged/);
    expect(packedText(rete, 'beta', 'flor.json')).toContain('10.0.0.2:7947');

    // Stamps that are not a map of strings are not taken: every file is read, and the edit is seen.
    const garbled = deserialize(readFileSync(v8File)) as { inputs: { yamlStamps: unknown } };
    for (const stamps of [['nodes'], new Map([['nodes/servers.yaml', 7]])]) {
      garbled.inputs.yamlStamps = stamps;
      writeFileSync(v8File, serialize(garbled));
      expect(readRecord(rete)?.inputs).toBeDefined();
      expect(readRecord(rete)?.inputs?.yamlStamps).toBeUndefined();
    }
    expect(await compile()).toMatch(/2 changed/);
    expect(packedText(rete, 'beta', 'flor.json')).toContain('10.0.0.2:7949');
  });
});
