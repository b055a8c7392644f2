import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalPretty, setDigest, sha256Hex } from '#bundle';
import { INITIAL_AGENT_STATE, type CompiledSetDigests } from '#contracts';
import { compileRete, digestsJsonText, validateRete } from '#rete';
import { configDigest, keepsLocalConfig } from './local-config.js';
import { LocalSetRefused, readCompiledSet } from './local-set.js';

/** A compiled node folder as `retectl compiled <node> --out` writes it, for a node with two file resources. */
const RETE = {
  'rete.yaml': `mesh:
  name: first
  coordinator: http://127.0.0.1:8080
nodes:
  - name: first
    kind: server
    listen: 127.0.0.1:7946
    resources:
      files:
        - { path: /srv/first/coordinator.env, content: "PORT=8080\\n", mode: "0600" }
        - { path: /srv/first/motd, content: "first\\n" }
  - name: second
    kind: server
    listen: 127.0.0.1:7947
`,
};

/** Compiles the rete into base/<node>, as retectl compile does; `legacy`, as an earlier retectl did (the artifacts in mgmt/). */
function compileInto(base: string, legacy = false): Record<string, string> {
  const { rete, diagnostics } = validateRete(Object.entries(RETE).map(([file, text]) => ({ file, text })));
  if (!rete) throw new Error(JSON.stringify(diagnostics));
  const dirs: Record<string, string> = {};
  for (const [node, files] of compileRete(rete)) {
    const dir = join(base, node);
    mkdirSync(legacy ? join(dir, 'mgmt') : dir, { recursive: true });
    for (const [name, content] of files) writeFileSync(legacy ? join(dir, 'mgmt', name) : join(dir, name), content);
    writeFileSync(join(dir, 'digests.json'), digestsJsonText(node, files));
    dirs[node] = dir;
  }
  return dirs;
}

function refusal(dir: string): LocalSetRefused {
  try {
    readCompiledSet(dir);
  } catch (err) {
    if (err instanceof LocalSetRefused) return err;
    throw err;
  }
  throw new Error(`${dir} was not refused`);
}

describe('reading a compiled node folder for flor agent apply --set', () => {
  let base: string;
  let first: string;
  let second: string;
  const list = (): CompiledSetDigests => JSON.parse(readFileSync(join(first, 'digests.json'), 'utf8'));
  /** Rewrites digests.json consistently (sizes, digests, set digest) after a hand edit of an artifact. */
  const relist = (node = 'first') => {
    const artifacts = list().artifacts.map((a) => {
      const bytes = readFileSync(join(first, a.name));
      return { name: a.name, sha256: sha256Hex(bytes), size: bytes.byteLength };
    });
    writeFileSync(join(first, 'digests.json'), canonicalPretty({ node, set_digest: setDigest(artifacts), artifacts }));
  };

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'flor-local-set-'));
    ({ first, second } = compileInto(join(base, 'compiled')));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('reads a folder as compiled: the node, the set digest and every artifact', () => {
    const set = readCompiledSet(first);
    expect(set.digests.node).toBe('first');
    expect([...set.files.keys()].sort()).toEqual(list().artifacts.map((a) => a.name));
    expect(set.digests.set_digest).toBe(setDigest([...set.files].map(([name, bytes]) => ({ name, sha256: sha256Hex(bytes) }))));
    expect(readCompiledSet(second).digests.node).toBe('second');
  });

  it('refuses a folder that does not exist, a file, and a folder without a digest list', () => {
    expect(refusal(join(base, 'nope'))).toMatchObject({ code: 'not_a_set', message: `${join(base, 'nope')} does not exist` });
    expect(refusal(join(first, 'digests.json'))).toMatchObject({ code: 'not_a_set', message: expect.stringContaining('is not a folder') });
    rmSync(join(second, 'digests.json'));
    expect(refusal(second)).toMatchObject({
      code: 'not_a_set',
      message: expect.stringMatching(
        /^\S+\/second is not a compiled node folder: it has no digests\.json: give the folder retectl writes for the node, retectl compiled <node> --out <dir>/,
      ),
    });
  });

  it('reads a folder an earlier retectl compiled, its artifacts in mgmt/, and names the parent when given mgmt/', () => {
    const legacy = compileInto(join(base, 'legacy'), true).first;
    expect(readdirSync(legacy).sort()).toEqual(['digests.json', 'mgmt']);
    const set = readCompiledSet(legacy);
    expect(set.digests).toEqual(readCompiledSet(first).digests);
    expect(set.files).toEqual(readCompiledSet(first).files);
    expect(refusal(join(legacy, 'mgmt')).message).toBe(
      `${join(legacy, 'mgmt')} is not a compiled node folder: it has no digests.json: give its parent folder, ${legacy}`,
    );
    writeFileSync(join(legacy, 'mgmt', 'extra.json'), '{}\n');
    expect(refusal(legacy)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(legacy, 'mgmt', 'extra.json')} is not in ${join(legacy, 'digests.json')}: an extra file in the set`,
    });
    rmSync(join(legacy, 'mgmt', 'extra.json'));
    writeFileSync(join(legacy, 'flor.json'), readFileSync(join(legacy, 'mgmt', 'flor.json')));
    expect(refusal(legacy)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(legacy, 'flor.json')} is not part of a compiled set: the folder holds only digests.json and mgmt/`,
    });
    rmSync(join(legacy, 'flor.json'));
    rmSync(join(legacy, 'mgmt', 'flor.json'));
    expect(refusal(legacy)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(legacy, 'mgmt', 'flor.json')} is missing: ${join(legacy, 'digests.json')} lists it`,
    });
  });

  it('refuses a digest list that is not JSON or not a digest list, naming it', () => {
    writeFileSync(join(first, 'digests.json'), '{"node":');
    expect(refusal(first)).toMatchObject({ code: 'not_a_set', message: expect.stringContaining(`${join(first, 'digests.json')} is not JSON`) });
    writeFileSync(join(first, 'digests.json'), JSON.stringify({ node: 'first', artifacts: [] }));
    expect(refusal(first)).toMatchObject({ code: 'not_a_set', message: expect.stringMatching(/digests\.json is not a digest list: set_digest: /) });
    // The list sits beside its artifacts, so none can have its name.
    const own = { name: 'digests.json', sha256: '0'.repeat(64), size: 0 };
    writeFileSync(join(first, 'digests.json'), JSON.stringify({ node: 'first', set_digest: setDigest([own]), artifacts: [own] }));
    expect(refusal(first)).toMatchObject({
      code: 'not_a_set',
      message: expect.stringMatching(/digests\.json is not a digest list: artifacts\.0\.name: digests\.json is the list's own name, not an artifact's$/),
    });
  });

  it('refuses an extra file or folder beside the artifacts, naming it', () => {
    writeFileSync(join(first, 'extra.json'), '{}\n');
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(first, 'extra.json')} is not in ${join(first, 'digests.json')}: an extra file in the set`,
    });
    rmSync(join(first, 'extra.json'));
    // A compile interrupted before its rename leaves a temp file: not part of the set either.
    writeFileSync(join(first, '.flor.json.42.tmp'), '{}\n');
    expect(refusal(first).message).toContain('.flor.json.42.tmp is not in');
    rmSync(join(first, '.flor.json.42.tmp'));
    mkdirSync(join(first, 'notes'));
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(first, 'notes')} is not in ${join(first, 'digests.json')}: an extra file in the set`,
    });
  });

  it('refuses a missing artifact, naming it', () => {
    rmSync(join(first, 'flor.json'));
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(first, 'flor.json')} is missing: ${join(first, 'digests.json')} lists it`,
    });
  });

  it('refuses an artifact whose bytes or size differ from the list, naming it and both digests', () => {
    const flor = join(first, 'flor.json');
    const text = readFileSync(flor, 'utf8');
    const listed = list().artifacts.find((a) => a.name === 'flor.json')!;
    // Same size, other bytes.
    writeFileSync(flor, text.replace('7946', '7947'));
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${flor} does not match ${join(first, 'digests.json')}: it has sha256 ${sha256Hex(text.replace('7946', '7947'))}, ${listed.size} bytes; the list says sha256 ${listed.sha256}, ${listed.size} bytes`,
    });
    writeFileSync(flor, `${text} `);
    expect(refusal(first).message).toContain(`it has ${listed.size + 1} bytes; the list says`);
  });

  it('refuses a symlink in place of an artifact', () => {
    const flor = join(first, 'flor.json');
    cpSync(flor, join(base, 'flor.json'));
    rmSync(flor);
    symlinkSync(join(base, 'flor.json'), flor);
    expect(refusal(first)).toMatchObject({ code: 'set_mismatch', message: `${flor} is not a regular file` });
  });

  it('refuses a list whose set digest is not its artifacts', () => {
    writeFileSync(join(first, 'digests.json'), canonicalPretty({ ...list(), set_digest: sha256Hex('other') }));
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: expect.stringContaining(`says set_digest ${sha256Hex('other')}, its artifacts give `),
    });
  });

  it('refuses a set whose agent.json is for another node than its list', () => {
    relist('second');
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(first, 'agent.json')} is for node first, ${join(first, 'digests.json')} for second`,
    });
  });

  it('refuses a resources.json that declares content the set lacks', () => {
    const motd = list().artifacts.find((a) => a.name.startsWith('file-') && a.size === 'first\n'.length)!;
    rmSync(join(first, motd.name));
    writeFileSync(
      join(first, 'digests.json'),
      canonicalPretty({
        node: 'first',
        set_digest: setDigest(list().artifacts.filter((a) => a.name !== motd.name)),
        artifacts: list().artifacts.filter((a) => a.name !== motd.name),
      }),
    );
    expect(refusal(first)).toMatchObject({
      code: 'set_mismatch',
      message: `${join(first, 'resources.json')} declares /srv/first/motd with content ${motd.name}, which the set lacks`,
    });
  });
});

describe('whether a coordinator version taking over from a local set must reach the vertex', () => {
  const set = (flor: string, resource: string) =>
    new Map<string, Buffer>([
      ['agent.json', Buffer.from('{"node":"first"}\n')],
      ['flor.json', Buffer.from(flor)],
      ['resources.json', Buffer.from(resource)],
      [`file-${sha256Hex(resource)}`, Buffer.from(resource)],
    ]);
  const local = (files: Map<string, Buffer>) => ({
    ...INITIAL_AGENT_STATE,
    local_set: { node: 'first', set_digest: sha256Hex('x'), source: '/x', applied_at: '2026-01-01T00:00:00.000Z', config_digest: configDigest(files) },
  });

  it('keeps the vertex when only host resources differ, and only while a local set is in effect', () => {
    expect(keepsLocalConfig(local(set('{"a":1}', 'one')), set('{"a":1}', 'two'))).toBe(true);
    expect(keepsLocalConfig(local(set('{"a":1}', 'one')), set('{"a":2}', 'one'))).toBe(false);
    expect(keepsLocalConfig(INITIAL_AGENT_STATE, set('{"a":1}', 'one'))).toBe(false);
  });

  it('counts an artifact added or dropped for the vertex as a change', () => {
    const more = set('{"a":1}', 'one');
    more.set('extra.json', Buffer.from('{}'));
    expect(keepsLocalConfig(local(set('{"a":1}', 'one')), more)).toBe(false);
  });
});
