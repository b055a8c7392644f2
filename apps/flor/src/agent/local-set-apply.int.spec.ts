import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentConfig } from '#contracts';
import { compileRete, digestsJsonText, validateRete } from '#rete';
import { createActivator } from './activator.js';
import { LocalSetApply } from './local-set.js';
import { StateDir } from './state-dir.js';
import { SyncPass } from './sync-pass.js';

/** LocalSetApply on the real filesystem, without a daemon: what each run leaves in the store and on the host. */
describe('applying a local set', () => {
  let root: string;
  let host: string;
  let dir: StateDir;
  let apply: LocalSetApply;

  /** Compiles a one-node rete with the given resources YAML into <root>/<name> and returns the node folder. */
  const compiled = (name: string, resources: string): string => {
    const text = `mesh:\n  name: m\n  coordinator: http://127.0.0.1:8080\nnodes:\n  - name: first\n    kind: server\n    listen: 127.0.0.1:7946\n    resources:\n${resources}`;
    const { rete, diagnostics } = validateRete([{ file: 'rete.yaml', text }]);
    if (!rete) throw new Error(JSON.stringify(diagnostics));
    const files = compileRete(rete).get('first')!;
    const out = join(root, name);
    mkdirSync(out, { recursive: true });
    for (const [n, content] of files) writeFileSync(join(out, n), content);
    writeFileSync(join(out, 'digests.json'), digestsJsonText('first', files));
    return out;
  };
  const file = (rel: string, content: string) => `        - { path: ${join(host, rel)}, content: ${JSON.stringify(content)} }\n`;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'flor-local-apply-'));
    host = join(root, 'host');
    dir = new StateDir(join(root, 'state'));
    dir.ensure();
    const config = AgentConfig.parse({ install: { dir: join(root, 'etc') } });
    const activator = createActivator({ kind: 'none' });
    const log = () => {};
    apply = new LocalSetApply(dir, config, activator, new SyncPass(dir, config, activator, log), log);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('replaces one local set with the next: drops what it dropped, leaves what it kept alone, prunes the old set', async () => {
    const one = compiled('one', `      files:\n${file('etc/motd', 'one\n')}${file('etc/note', 'note\n')}`);
    const a = await apply.run({ dir: one });
    expect(a).toMatchObject({
      result: 'applied',
      activation: 'none',
      resources: [expect.objectContaining({ outcome: 'applied' }), expect.objectContaining({ outcome: 'applied' })],
    });
    const motd = statSync(join(host, 'etc/motd'));

    const two = compiled('two', `      files:\n${file('etc/motd', 'one\n')}${file('etc/other', 'other\n')}`);
    const b = await apply.run({ dir: two });
    expect(b.result).toBe('applied');
    expect(b.resources).toEqual([
      { kind: 'file', path: join(host, 'etc/motd'), outcome: 'unchanged' },
      { kind: 'file', path: join(host, 'etc/other'), outcome: 'applied' },
      { kind: 'file', path: join(host, 'etc/note'), outcome: 'removed' },
    ]);
    expect(statSync(join(host, 'etc/motd'))).toMatchObject({ ino: motd.ino, mtimeMs: motd.mtimeMs });
    expect(existsSync(join(host, 'etc/note'))).toBe(false);
    expect(readlinkSync(dir.activeLink)).toBe(`sets/local-${b.set_digest}`);
    expect(readdirSync(dir.setsDir)).toEqual([`local-${b.set_digest}`]);
    expect(dir.readState().local_set).toMatchObject({ node: 'first', set_digest: b.set_digest, source: two });
  });

  it('fails a set whose package apt cannot install, as a pass does: the file before it stays written and recorded, nothing is switched', async () => {
    // apt reads an empty list folder of the test's own: the package cannot be found, and the machine's sources are not read.
    const lists = join(root, 'apt-lists');
    mkdirSync(join(lists, 'partial'), { recursive: true });
    const config = AgentConfig.parse({
      install: { dir: join(root, 'etc') },
      packages: { apt: { options: [`Dir::State::Lists=${lists}`, 'Dir::Etc::sourceparts=-', `Dir::Etc::sourcelist=${join(root, 'none.list')}`] } },
    });
    const activator = createActivator({ kind: 'none' });
    const log = () => {};
    apply = new LocalSetApply(dir, config, activator, new SyncPass(dir, config, activator, log), log);
    const set = compiled('pkg', `      files:\n${file('etc/motd', 'one\n')}      packages:\n        - { name: florete-fixture-first, version: 1.0-1 }\n`);
    const r = await apply.run({ dir: set });
    expect(r).toMatchObject({ result: 'failed', node: 'first' });
    expect(r.reason).toMatch(/florete-fixture-first=1\.0-1[\s\S]*Unable to locate package/);
    expect(readFileSync(join(host, 'etc/motd'), 'utf8')).toBe('one\n');
    expect(dir.readOwned().files[join(host, 'etc/motd')]).toBeDefined();
    expect(existsSync(dir.activeLink)).toBe(false);
    expect(readdirSync(dir.setsDir)).toEqual([]);
    expect(dir.readState()).toMatchObject({ local_set: null, last_result: 'failed', last_error: r.reason });
    expect(existsSync(join(root, 'etc', 'flor.json'))).toBe(false);
  });

  it('refuses a store that already holds a version from a coordinator', async () => {
    dir.writeState({ ...dir.readState(), applied_version: 3, high_water: 3 });
    const before = readFileSync(dir.statePath, 'utf8');
    const r = await apply.run({ dir: compiled('one', `      files:\n${file('etc/motd', 'one\n')}`) });
    expect(r).toMatchObject({
      result: 'refused',
      code: 'coordinator_owned',
      reason: `${dir.root} holds version 3 from a coordinator: a local set is for a node no coordinator has given a set yet; use a fresh state dir`,
    });
    expect(readFileSync(dir.statePath, 'utf8')).toBe(before);
    expect(existsSync(join(host, 'etc/motd'))).toBe(false);
  });
});
