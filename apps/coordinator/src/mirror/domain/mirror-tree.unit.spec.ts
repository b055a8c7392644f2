import { execFileSync } from 'node:child_process';
import { gitObject, parseTree, treeObject, type TreeEntry } from './git-object.js';
import { authorOf, blobsFrom, commitMessage, ledgerPositionOf, MirrorTree } from './mirror-tree.js';
import type { MirrorPublish } from './publish-group.js';

const blobOf = (sha: string) => gitObject('blob', Buffer.from(`content of ${sha}\n`));
let position = 0;
function publish(stamps: { node: string; version: number; files?: string[]; retired?: boolean }[], extra: Partial<MirrorPublish> = {}): MirrorPublish {
  position += stamps.length + 1;
  return {
    position,
    hash: 'ab'.repeat(32),
    publishId: `p-${position}`,
    kind: 'publish',
    message: 'a message',
    actor: 'alice',
    recordedAt: '2026-01-02T03:04:05.678Z',
    changed: stamps.map((s) => ({ node: s.node, from: s.version - 1, to: s.version })),
    stamps: stamps.map((s) => ({
      node: s.node,
      version: s.version,
      set_digest: 'd',
      retired: s.retired ?? false,
      artifacts: (s.files ?? []).map((f) => ({ name: f.split('=')[0], sha256: f, size: 1 })),
      publish_id: `p-${position}`,
    })),
    ...extra,
  };
}

describe('mirror tree', () => {
  it('folds a publish in slices to the same commit and objects as in one piece, letting others run between slices', async () => {
    const stamps = Array.from({ length: 1000 }, (_, i) => ({ node: `n${String(i).padStart(4, '0')}`, version: 1, files: [`flor.json=${i}`] }));
    const retire = [{ node: 'n0007', version: 2, retired: true }];
    const whole = MirrorTree.empty();
    const sliced = MirrorTree.empty();
    for (const p of [publish(stamps), publish(retire)]) {
      const one = whole.apply(p, blobOf);
      let turns = 0;
      // Counts the turns the event loop got while the sliced fold ran.
      let counting = true;
      const count = () => {
        if (!counting) return;
        turns++;
        setImmediate(count);
      };
      setImmediate(count);
      const inSlices = await sliced.applyInSlices(p, blobOf, 100);
      counting = false;
      expect(inSlices.commit).toBe(one.commit);
      expect(inSlices.objects.map((o) => o.oid)).toEqual(one.objects.map((o) => o.oid));
      if (p.stamps.length === 1000) expect(turns).toBeGreaterThanOrEqual(9);
    }
    expect(sliced.commit).toBe(whole.commit);
    expect(sliced.rootEntries()).toEqual(whole.rootEntries());
  });

  it('hashes objects exactly as git does', () => {
    const blob = gitObject('blob', Buffer.from('hello\n'));
    expect(blob.oid).toBe(execFileSync('git', ['hash-object', '--stdin'], { input: 'hello\n', encoding: 'utf8' }).trim());
    expect(gitObject('tree', Buffer.alloc(0)).oid).toBe('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
  });

  it('orders a folder as if its name ended in "/", so a-b/ comes before a/', () => {
    const oid = 'e'.repeat(40);
    const entries: TreeEntry[] = [
      { name: 'a', kind: 'tree', oid },
      { name: 'a-b', kind: 'tree', oid },
      { name: 'a.json', kind: 'file', oid },
    ];
    expect(parseTree(treeObject(entries).content).map((e) => e.name)).toEqual(['a-b', 'a.json', 'a']);
  });

  it('rewrites only the touched folder, the root and the commit, reusing every other subtree id', () => {
    const tree = MirrorTree.empty();
    tree.apply(
      publish([
        { node: 'alpha', version: 1, files: ['flor.json=1'] },
        { node: 'beta', version: 1, files: ['flor.json=2'] },
      ]),
      blobOf,
    );
    const before = new Map(tree.rootEntries().map((e) => [e.name, e.oid]));
    const { objects } = tree.apply(publish([{ node: 'alpha', version: 2, files: ['flor.json=3'] }]), blobOf);
    expect(objects.map((o) => o.type)).toEqual(['blob', 'blob', 'tree', 'tree', 'tree', 'commit']);
    const after = new Map(tree.rootEntries().map((e) => [e.name, e.oid]));
    expect(after.get('beta')).toBe(before.get('beta'));
    expect(after.get('alpha')).not.toBe(before.get('alpha'));
  });

  it('builds each blob from its body as git does, and names a body that did not come with the publish', () => {
    const body = Buffer.from('{"acl":[]}\n');
    // A body that is a view into a larger buffer (as the writer thread receives them) hashes as its own bytes.
    const shared = Buffer.concat([Buffer.from('before'), body, Buffer.from('after')]);
    const blobOf = blobsFrom(new Map([['s'.repeat(64), shared.subarray(6, 6 + body.length)]]), 'the publish at 7');
    const blob = blobOf('s'.repeat(64));
    expect(blob.oid).toBe(execFileSync('git', ['hash-object', '--stdin'], { input: body }).toString().trim());
    expect(Buffer.from(blob.content).equals(body)).toBe(true);
    const stamps = publish([{ node: 'alpha', version: 1, files: [`flor.json=${'t'.repeat(64)}`] }]);
    const tree = MirrorTree.empty();
    expect(() => tree.apply(stamps, blobOf)).toThrow(`the body of flor.json=${'t'.repeat(64)} did not come with the publish at 7`);
  });

  it('removes a retired node folder and brings it back when the node is published again', () => {
    const tree = MirrorTree.empty(true);
    tree.apply(
      publish([
        { node: 'alpha', version: 1, files: ['f=1'] },
        { node: 'beta', version: 1 },
      ]),
      blobOf,
    );
    tree.apply(publish([{ node: 'alpha', version: 2, retired: true }]), blobOf);
    expect(tree.rootEntries().map((e) => e.name)).toEqual(['beta']);
    tree.apply(publish([{ node: 'alpha', version: 3, files: ['f=1'] }]), blobOf);
    expect(tree.rootEntries().map((e) => e.name)).toEqual(['alpha', 'beta']);
    expect(tree.nodeState().get('alpha')?.version).toBe(3);
    expect(tree.nodeState().has('beta')).toBe(true);
    // A writer's tree does not keep them, and says so rather than answering an empty map.
    const writer = MirrorTree.empty();
    writer.apply(publish([{ node: 'gamma', version: 1, files: ['f=1'] }]), blobOf);
    expect(() => writer.nodeState()).toThrow(/does not keep what each node folder holds/);
  });

  it('gives the same commit ids for the same publishes, and different ids when anything recorded differs', () => {
    const history = [publish([{ node: 'alpha', version: 1, files: ['f=1'] }]), publish([{ node: 'alpha', version: 2, files: ['f=2'] }])];
    const run = (ps: MirrorPublish[]) => {
      const t = MirrorTree.empty();
      return ps.map((p) => t.apply(p, blobOf).commit);
    };
    expect(run(history)).toEqual(run(history));
    expect(run([history[0], { ...history[1], actor: 'mallory' }])[1]).not.toBe(run(history)[1]);
    expect(run([history[0], { ...history[1], recordedAt: '2026-01-02T03:04:06.000Z' }])[1]).not.toBe(run(history)[1]);
  });

  it('writes the message, one line per touched node and the ledger trailers', () => {
    const p = publish(
      [
        { node: 'alpha', version: 5 },
        { node: 'beta', version: 1 },
      ],
      { message: '  tighten acl\r\n\n' },
    );
    expect(commitMessage(p)).toBe(
      `tighten acl\n\nalpha 4 -> 5\nbeta 0 -> 1\n\nLedger-Position: ${p.position}\nLedger-Hash: ${'ab'.repeat(32)}\nPublish-Id: ${p.publishId}\n`,
    );
    expect(ledgerPositionOf(commitMessage(p))).toBe(p.position);
    expect(commitMessage({ ...p, message: '' }).startsWith('publish\n\n')).toBe(true);
  });

  it('names each ineligible node the publish accepted in a trailer, with the checks it failed', () => {
    const failed = [
      { check: 'clock skew acceptable', detail: '900 s' },
      { check: 'agent version\nsupported', detail: 'dev' },
    ];
    const p = publish([{ node: 'alpha', version: 2 }], { acceptedIneligible: [{ node: 'alpha', failed_briefing: failed }] });
    expect(commitMessage(p).endsWith(`Publish-Id: ${p.publishId}\nAccepted-Ineligible: alpha (clock skew acceptable, agent version supported)\n`)).toBe(true);
    expect(commitMessage({ ...p, acceptedIneligible: [] })).not.toContain('Accepted-Ineligible');
  });

  it('turns any token name into an identity git accepts', () => {
    expect(authorOf('CI Bot <ops>')).toEqual({ name: 'CI Bot ops', email: 'ci-bot-ops@florete.invalid' });
    expect(authorOf('<>')).toEqual({ name: 'unknown', email: 'unknown@florete.invalid' });
  });
});
