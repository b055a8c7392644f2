import { sha256Hex } from '#bundle';
import { RolloutPlan, type NodeLabels, type PublishRequest, type TokenScope } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { putBlob } from '../bundles/blobs.repository.js';
import { DomainError } from '../common/domain-error.js';
import { PublishTreeCommand } from '../ledger/commands/publish-tree.command.js';
import { PublishTreeHandler } from '../ledger/commands/publish-tree.handler.js';
import { RetireNodeCommand } from '../ledger/commands/retire-node.command.js';
import { RetireNodeHandler } from './commands/retire-node.handler.js';
import { RollbackNodeCommand } from '../ledger/commands/rollback-node.command.js';
import { RollbackNodeHandler } from '../ledger/commands/rollback-node.handler.js';
import { readAllNodeLabels } from './node-labels.repository.js';
import { scopeGuard } from './scope-guard.js';
import { RolloutsController } from '../rollouts/rollouts.controller.js';
import type { Principal } from '../common/index.js';

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

const EDGE: TokenScope = ['tag:edge'];
const edge: NodeLabels = { tags: ['edge'], groups: [] };
const db: NodeLabels = { tags: ['db'], groups: ['data'] };

describe.each(testDatabases)('a scoped publisher token on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
  });
  afterEach(async () => {
    await h.close();
  });

  /** A publish request whose nodes each carry one artifact of the given content, its blobs uploaded. */
  async function request(contents: Record<string, string>, labels?: Record<string, NodeLabels>, extra: Partial<PublishRequest> = {}): Promise<PublishRequest> {
    const nodes: PublishRequest['nodes'] = {};
    for (const [node, content] of Object.entries(contents)) {
      const bytes = Buffer.from(content, 'utf8');
      await putBlob(h.db.kysely, sha256Hex(bytes), bytes);
      nodes[node] = { artifacts: { 'flor.json': sha256Hex(bytes) } };
    }
    return { message: 'test', nodes, ...(labels ? { labels } : {}), ...extra };
  }
  const publishAs = (scope: TokenScope | null, req: PublishRequest) =>
    new PublishTreeHandler(h.writer).execute(new PublishTreeCommand(req, 'ci', undefined, scopeGuard(scope, 'this publish', req.labels)));
  const versionOf = async (node: string) =>
    (await h.db.kysely.selectFrom('node_heads').select('version').where('node', '=', node).executeTakeFirst())?.version ?? 0;
  const labels = async () => Object.fromEntries(await readAllNodeLabels(h.db.kysely));

  /** web-1 carries tag edge, db-1 tag db and group data: published by an unscoped token. */
  async function fleet() {
    await publishAs(null, await request({ 'web-1': 'w1', 'db-1': 'd1' }, { 'web-1': edge, 'db-1': db }));
  }

  it('refuses a publish that changes a node outside its scope whole, naming it, and writes nothing', async () => {
    await fleet();
    const before = await h.head();
    const err = await refusal(publishAs(EDGE, await request({ 'web-1': 'w2', 'db-1': 'd2' }, { 'web-1': edge, 'db-1': db })));
    expect(err.code).toBe('out_of_scope');
    expect(err.details).toEqual({ nodes: ['db-1'], scope: EDGE });
    expect(await h.head()).toEqual(before);
    // The node in scope was not stamped either: the request is refused whole.
    expect(await versionOf('web-1')).toBe(1);
    expect(await versionOf('db-1')).toBe(1);
  });

  it('accepts a publish that changes only nodes in its scope, and one that leaves the others as they are', async () => {
    await fleet();
    const answer = await publishAs(EDGE, await request({ 'web-1': 'w2', 'db-1': 'd1' }, { 'web-1': edge, 'db-1': db }));
    expect(answer.changed.map((c) => c.node)).toEqual(['web-1']);
    expect(await versionOf('web-1')).toBe(2);
    expect(await versionOf('db-1')).toBe(1);
  });

  it('refuses relabelling a node into its scope, with or without a change of its set', async () => {
    await fleet();
    const before = await h.head();
    const moved = await refusal(publishAs(EDGE, await request({ 'db-1': 'd2' }, { 'db-1': { tags: ['edge'], groups: [] } })));
    expect(moved.code).toBe('out_of_scope');
    expect(moved.details?.nodes).toEqual(['db-1']);
    const relabelOnly = await refusal(publishAs(EDGE, await request({ 'db-1': 'd1' }, { 'db-1': { tags: ['db', 'edge'], groups: ['data'] } })));
    expect(relabelOnly.code).toBe('out_of_scope');
    expect(await h.head()).toEqual(before);
    expect(await labels()).toEqual({ 'web-1': edge, 'db-1': db });
  });

  it('refuses relabelling a node of its scope out of it, and lets an unscoped token relabel anything', async () => {
    await fleet();
    const before = await h.head();
    expect((await refusal(publishAs(['tag:db'], await request({ 'db-1': 'd2' }, { 'db-1': { tags: [], groups: ['data'] } })))).code).toBe('out_of_scope');
    expect(await h.head()).toEqual(before);
    expect((await labels())['db-1']).toEqual(db);
    // In group:data before and after: the change is its own to make.
    await publishAs(['group:data'], await request({ 'db-1': 'd1' }, { 'db-1': { tags: [], groups: ['data'] } }));
    expect((await labels())['db-1']).toEqual({ tags: [], groups: ['data'] });
    await publishAs(null, await request({ 'db-1': 'd1' }, { 'db-1': edge }));
    expect((await labels())['db-1']).toEqual(edge);
  });

  it('accepts a node new to the ledger by the labels it comes with, and refuses one that comes without a label of the scope', async () => {
    await fleet();
    const answer = await publishAs(EDGE, await request({ 'edge-2': 'e2' }, { 'edge-2': edge }));
    expect(answer.changed).toEqual([{ node: 'edge-2', from: 0, to: 1 }]);
    expect((await labels())['edge-2']).toEqual(edge);
    const before = await h.head();
    const err = await refusal(publishAs(EDGE, await request({ 'db-2': 'x' }, { 'db-2': db })));
    expect(err.details?.nodes).toEqual(['db-2']);
    expect(await refusal(publishAs(EDGE, await request({ 'db-3': 'x' })))).toMatchObject({ code: 'out_of_scope' });
    expect(await h.head()).toEqual(before);
  });

  it('judges a node the ledger knows without labels by its name only', async () => {
    await publishAs(null, await request({ 'old-1': 'o1' }));
    const before = await h.head();
    expect((await refusal(publishAs(EDGE, await request({ 'old-1': 'o2' }, { 'old-1': edge })))).details?.nodes).toEqual(['old-1']);
    expect(await h.head()).toEqual(before);
    await publishAs(['old-1'], await request({ 'old-1': 'o2' }, { 'old-1': edge }));
    expect(await versionOf('old-1')).toBe(2);
  });

  it('refuses a pruning publish that would retire nodes outside its scope', async () => {
    await fleet();
    const before = await h.head();
    const err = await refusal(publishAs(EDGE, await request({ 'web-1': 'w1' }, { 'web-1': edge }, { prune: true })));
    expect(err.details?.nodes).toEqual(['db-1']);
    expect(await h.head()).toEqual(before);
  });

  it('refuses a rollout whose later waves hold a node outside its scope, though its first wave is in it', async () => {
    await fleet();
    const before = await h.head();
    const plan = RolloutPlan.parse({ canary: ['web-1'], waves: [100] });
    const err = await refusal(publishAs(EDGE, await request({ 'web-1': 'w2', 'db-1': 'd2' }, { 'web-1': edge, 'db-1': db }, { rollout: plan })));
    expect(err.details?.nodes).toEqual(['db-1']);
    expect(await h.head()).toEqual(before);
    const inScope = await publishAs(
      ['tag:edge', 'group:data'],
      await request({ 'web-1': 'w2', 'db-1': 'd2' }, { 'web-1': edge, 'db-1': db }, { rollout: plan }),
    );
    expect(inScope.changed).toEqual([{ node: 'web-1', from: 1, to: 2 }]);
  });

  it('refuses steering a rollout with a node outside its scope, a pause included, and allows it to a scope holding them all', async () => {
    await fleet();
    const plan = RolloutPlan.parse({ canary: ['web-1'], waves: [100] });
    const started = await publishAs(null, await request({ 'web-1': 'w2', 'db-1': 'd2' }, { 'web-1': edge, 'db-1': db }, { rollout: plan }));
    const id = started.rollout!.id;
    const controller = new RolloutsController(h.db, h.writer, { guard: scopeGuard });
    const as = (scope: TokenScope | null): Principal => ({ kind: 'api', id: 't', name: 'ci', role: 'publisher', scope });
    const before = await h.head();
    // Promote releases the next wave: db-1, outside the edge scope; a pause would hold db-1 too.
    for (const action of ['promote', 'pause', 'abort'])
      expect([action, await refusal(controller.act(id, action, {}, as(EDGE)))]).toEqual([
        action,
        expect.objectContaining({ code: 'out_of_scope', details: { nodes: ['db-1'], scope: EDGE } }),
      ]);
    expect(await h.head()).toEqual(before);
    // A rollout of none of its nodes is unknown to it.
    expect(await refusal(controller.act(id, 'pause', {}, as(['tag:nothing'])))).toMatchObject({ code: 'unknown_rollout' });
    const both: TokenScope = ['tag:edge', 'group:data'];
    expect((await controller.act(id, 'pause', {}, as(both))).status).toBe('paused');
    await controller.act(id, 'promote', {}, as(null));
    expect(await versionOf('db-1')).toBe(2);
    expect((await controller.act(id, 'abort', {}, as(both))).status).toBe('aborted');
    expect([await versionOf('web-1'), await versionOf('db-1')]).toEqual([3, 3]);
  });

  it('shows a scoped reader the rollouts that reach its nodes, and no other', async () => {
    await fleet();
    await publishAs(null, await request({ 'web-2': 'x' }, { 'web-2': edge }));
    const plan = RolloutPlan.parse({ canary: [], waves: [100] });
    const webOnly = (await publishAs(null, await request({ 'web-1': 'w2', 'web-2': 'x2' }, { 'web-1': edge, 'web-2': edge }, { rollout: plan }))).rollout!.id;
    const dbOnly = (await publishAs(null, await request({ 'db-1': 'd2' }, { 'db-1': db }, { rollout: plan }))).rollout!.id;
    const controller = new RolloutsController(h.db, h.writer, { guard: scopeGuard });
    const as = (scope: TokenScope | null): Principal => ({ kind: 'api', id: 't', name: 'view', role: 'reader', scope });
    const ids = async (scope: TokenScope | null) => (await controller.list({}, as(scope))).rollouts.map((r) => r.id);
    expect(await ids(null)).toEqual([dbOnly, webOnly]);
    expect(await ids(EDGE)).toEqual([webOnly]);
    expect(await ids(['db-1'])).toEqual([dbOnly]);
    expect(await ids(['web-2', 'group:data'])).toEqual([dbOnly, webOnly]);
    expect(await ids(['tag:nothing'])).toEqual([]);
    expect((await controller.one(webOnly, as(EDGE))).id).toBe(webOnly);
    expect(await refusal(controller.one(dbOnly, as(EDGE)))).toMatchObject({ code: 'unknown_rollout' });
  });

  it('refuses confirming a publish that reaches a node outside its scope, and confirms one within it', async () => {
    await fleet();
    const windowed = await publishAs(null, await request({ 'web-1': 'w2', 'db-1': 'd2' }, { 'web-1': edge, 'db-1': db }, { confirm_within: 600 }));
    const confirm = (scope: TokenScope | null) => {
      const admit = scopeGuard(scope, 'this confirmation');
      return h.writer.write({ actor: 'ci', ...(admit ? { admit } : {}) }, { type: 'confirm_publish', publishId: windowed.publish_id! });
    };
    const before = await h.head();
    expect(await refusal(confirm(EDGE))).toMatchObject({ code: 'out_of_scope', details: { nodes: ['db-1'], scope: EDGE } });
    expect(await h.head()).toEqual(before);
    // Once db-1 runs a later publish, the confirmation reaches web-1 alone: in the edge scope.
    await publishAs(null, await request({ 'db-1': 'd3' }, { 'db-1': db }));
    expect((await confirm(EDGE)).unchanged).toBe(1);
  });

  it('refuses a rollback or a retirement outside its scope, and allows them inside it', async () => {
    await fleet();
    await publishAs(null, await request({ 'web-1': 'w2', 'db-1': 'd2' }));
    const before = await h.head();
    const rollback = (node: string, scope: TokenScope) =>
      new RollbackNodeHandler(h.writer).execute(new RollbackNodeCommand(node, 1, 'back', 'ci', undefined, [], scopeGuard(scope, 'this rollback')));
    const retire = (node: string, scope: TokenScope) =>
      new RetireNodeHandler(h.writer, h.db).execute(new RetireNodeCommand(node, 'retire', 'ci', undefined, false, scopeGuard(scope, 'this retirement')));
    expect(await refusal(rollback('db-1', EDGE))).toMatchObject({ code: 'out_of_scope', details: { nodes: ['db-1'] } });
    expect(await refusal(retire('db-1', EDGE))).toMatchObject({ code: 'out_of_scope', details: { nodes: ['db-1'] } });
    expect(await h.head()).toEqual(before);
    expect((await rollback('web-1', EDGE)).changed).toEqual([{ node: 'web-1', from: 2, to: 3 }]);
    expect((await retire('db-1', ['group:data'])).changed).toEqual([{ node: 'db-1', from: 2, to: 3 }]);
  });

  it('names the first nodes in its message and every one in its details', async () => {
    const many = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`db-${i}`, `d${i}`]));
    const err = await refusal(publishAs(EDGE, await request(many)));
    expect(err.message).toContain('8 nodes');
    expect(err.message).toContain('and 3 more');
    expect(err.details?.nodes).toHaveLength(8);
  });
});
