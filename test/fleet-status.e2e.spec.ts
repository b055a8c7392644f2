import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client, expectProblem } from './support/http.js';

/**
 * What a publish reached, as the coordinator accounts for it from node reports sent over HTTP with
 * real node credentials. Real agents drive the same endpoints in the agent fleet tests.
 */
const profile = (extra: Record<string, unknown> = {}) => ({
  hostname: 'h',
  os: 'linux',
  arch: 'x64',
  agent_version: '0.1.0',
  clock: new Date().toISOString(),
  ...extra,
});

describe.each(hasPostgres ? ['pglite', 'postgres'] : ['pglite'])('fleet status on %s', (database) => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let reader: Client;
  const nodes: Record<string, Client> = {};

  async function enrol(node: string, extra: Record<string, unknown> = {}) {
    const token = (await admin.post('/v1/enrolment-tokens', { node })).body.token as string;
    const r = await admin.as(undefined).post('/v1/enrol', { token, profile: profile(), inventory: {}, ...extra });
    expect(r.status).toBe(201);
    nodes[node] = admin.as(r.body.credential);
    return r;
  }

  async function publishRequest(tree: Record<string, string>, message: string, extra: Record<string, unknown> = {}) {
    const body: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, content] of Object.entries(tree)) body[node] = { artifacts: { 'flor.json': await admin.putBlob(content) } };
    return admin.post('/v1/publishes', { message, nodes: body, ...extra });
  }

  async function publish(tree: Record<string, string>, message: string, extra: Record<string, unknown> = {}) {
    const r = await publishRequest(tree, message, extra);
    expect(r.status).toBe(201);
    return r.body as { publish_id: string; changed: { node: string; to: number }[]; accepted_ineligible?: unknown };
  }

  const report = (node: string, body: Record<string, unknown>) => nodes[node].post(`/v1/nodes/${node}/reports`, body);
  const nodeList = async (query = '') =>
    (await reader.get(`/v1/nodes${query}`)).body.items as {
      node: string;
      state: string;
      credential: string;
      convergence: string | null;
      ineligible: boolean;
      last_contact_age_seconds: number | null;
    }[];
  const names = (items: { node: string }[]) => items.map((i) => i.node);

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({ databaseUrl: database === 'postgres' ? await createPostgresDatabase() : undefined });
    admin = new Client(coordinator.url, coordinator.adminToken);
    reader = admin.as((await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token);
    for (const n of ['applier', 'failer', 'sleeper', 'racer']) await enrol(n);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('tells applied, failed (with the reason), outstanding and superseded apart', async () => {
    const p1 = await publish({ applier: 'a1', failer: 'f1', sleeper: 's1', racer: 'r1' }, 'first');
    const hotReload = { path: 'hot-reload', answer: 'swapped' };
    expect((await report('applier', { active_version: 1, result: 'applied', installed: ['/etc/florete/flor.json'], activation: hotReload })).status).toBe(204);
    expect((await report('failer', { active_version: 0, target_version: 1, result: 'failed', error: 'systemctl restart florete-vertex: exit 5' })).status).toBe(
      204,
    );
    await publish({ racer: 'r2' }, 'second');
    expect((await report('racer', { active_version: 2, result: 'applied' })).status).toBe(204);

    const detail = (await reader.get(`/v1/publishes/${p1.publish_id}`)).body;
    const byNode = Object.fromEntries(detail.nodes.map((n: { node: string }) => [n.node, n]));
    expect(byNode.applier).toMatchObject({ status: 'applied', reason: null, last_contact: expect.any(String), activation: hotReload });
    expect(byNode.sleeper.activation).toBeNull();
    expect(byNode.failer).toMatchObject({ status: 'failed', reason: 'systemctl restart florete-vertex: exit 5' });
    expect(byNode.sleeper).toMatchObject({ status: 'outstanding', reason: null, last_contact: null });
    expect(byNode.racer).toMatchObject({ status: 'superseded' });
    expect(detail.counts).toEqual({ applied: 1, failed: 1, outstanding: 1, reverted: 0, superseded: 1 });

    // A rejection that names no version (a replayed or foreign bundle) does not undo what the node applied.
    expect((await report('applier', { active_version: 1, result: 'rejected', error: 'bundle is for another node' })).status).toBe(204);
    expect((await reader.get(`/v1/publishes/${p1.publish_id}`)).body.nodes.find((n: { node: string }) => n.node === 'applier').status).toBe('applied');

    // A node that stays silent is still outstanding, never failed; it becomes applied when it reports.
    expect((await report('sleeper', { active_version: 1, result: 'applied' })).status).toBe(204);
    const later = (await reader.get(`/v1/publishes/${p1.publish_id}`)).body;
    expect(later.counts).toEqual({ applied: 2, failed: 1, outstanding: 0, reverted: 0, superseded: 1 });
    // The counts alone agree with the detail, and the node pages list each status.
    const counts = (await reader.get(`/v1/publishes/${p1.publish_id}/counts`)).body;
    expect(counts).toMatchObject({ publish_id: p1.publish_id, total: 4, counts: later.counts });
    expect(counts).not.toHaveProperty('changed');
    expect(counts).not.toHaveProperty('nodes');
    const page = (status: string, extra = '') => reader.get(`/v1/publishes/${p1.publish_id}/nodes?status=${status}${extra}`);
    expect((await page('superseded')).body.items.map((n: { node: string }) => n.node)).toEqual(['racer']);
    const first = (await page('applied', '&limit=1')).body;
    expect(first).toMatchObject({ items: [{ node: 'applier', status: 'applied' }], next_cursor: 'applier', total: 4 });
    expect((await page('applied', `&limit=1&cursor=${first.next_cursor}`)).body).toMatchObject({ items: [{ node: 'sleeper' }], next_cursor: null });
    expectProblem(await page('lost'), 422, 'invalid_query');
  });

  it('filters nodes by lifecycle state, credential, convergence and last contact', async () => {
    await admin.post('/v1/enrolment-tokens', { node: 'newcomer' });
    await enrol('leaver');
    expect((await admin.delete('/v1/nodes/leaver/credential')).status).toBe(200);

    // No agent ever enrolled as newcomer: unmanaged, with a token out. leaver is still a node, its credential revoked.
    expect(names(await nodeList('?state=unmanaged'))).toEqual(['newcomer']);
    expect(names(await nodeList('?credential=pending'))).toEqual(['newcomer']);
    expect(names(await nodeList('?credential=revoked'))).toEqual(['leaver']);
    expect(names(await nodeList('?state=enrolled'))).toEqual(['applier', 'failer', 'leaver', 'racer', 'sleeper']);
    expect(names(await nodeList('?state=enrolled&credential=live'))).toEqual(['applier', 'failer', 'racer', 'sleeper']);
    expect(names(await nodeList('?state=converged'))).toEqual(['applier', 'racer', 'sleeper']);
    expect(names(await nodeList('?state=failed'))).toEqual(['failer']);

    const all = await nodeList();
    expect(all.find((n) => n.node === 'newcomer')).toMatchObject({
      state: 'unmanaged',
      credential: 'pending',
      convergence: null,
      last_contact_age_seconds: null,
    });
    expect(all.find((n) => n.node === 'leaver')).toMatchObject({ state: 'enrolled', credential: 'revoked', last_contact_age_seconds: null });
    expect(all.find((n) => n.node === 'applier')).toMatchObject({ state: 'enrolled', credential: 'live' });
    expect(all.find((n) => n.node === 'applier')?.last_contact_age_seconds).toBeGreaterThanOrEqual(0);

    const future = new Date(Date.now() + 60_000).toISOString();
    expect(names(await nodeList(`?contact_after=${future}`))).toEqual([]);
    expect(names(await nodeList(`?contact_before=${future}`))).toEqual(expect.arrayContaining(['applier', 'newcomer']));
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect(names(await nodeList(`?contact_after=${past}`))).toEqual(['applier', 'failer', 'racer', 'sleeper']);

    // By age, on the coordinator's clock: a node that never made contact is older than any age.
    expect(names(await nodeList('?contact_older_than=1h'))).toEqual(['leaver', 'newcomer']);
    expect(names(await nodeList('?contact_older_than=1h&state=enrolled'))).toEqual(['leaver']);
    await new Promise((r) => setTimeout(r, 2100));
    expect(names(await nodeList('?contact_older_than=1s'))).toEqual(['applier', 'failer', 'leaver', 'newcomer', 'racer', 'sleeper']);
    const aged = (await nodeList('?contact_older_than=1s')).find((n) => n.node === 'applier')!;
    expect(aged.last_contact_age_seconds).toBeGreaterThan(1);
    for (const bad of ['3600', '1x', '1h 30m', '']) {
      const r = await reader.get(`/v1/nodes?contact_older_than=${encodeURIComponent(bad)}`);
      expect({ bad, status: r.status, code: r.body.code }).toEqual({ bad, status: 422, code: 'invalid_query' });
    }

    expect((await reader.get('/v1/nodes?state=lost')).status).toBe(422);
    // The words of the older vocabulary are refused with the filter that replaces them; disconnected is the agent's word.
    const refused = async (query: string) => {
      const r = await reader.get(`/v1/nodes?${query}`);
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 422, code: 'invalid_query' });
      return r.body.detail as string;
    };
    expect(await refused('state=pending')).toMatch(/pending is no longer a state: use credential=pending/);
    expect(await refused('state=unenrolled')).toMatch(/use state=unmanaged&credential=none/);
    expect(await refused('state=revoked')).toMatch(/use state=enrolled&credential=revoked/);
    expect(await refused('state=disconnected')).toMatch(/never declares a node disconnected.*contact_older_than=1h/);
    expect(await refused('credential=expired')).toMatch(/^query\.credential: /);
    // An activation path the contract does not know is refused, not stored.
    expect((await report('applier', { active_version: 1, result: 'applied', activation: { path: 'telepathy' } })).status).toBe(422);
  });

  it('marks a node whose briefing failed ineligible, and refuses to publish to it until accepted or enrolled cleanly', async () => {
    const r = await enrol('skewed', { profile: profile({ clock: '2001-01-01T00:00:00Z' }) });
    expect(r.body.briefing.outcome).toBe('fail');
    expect(r.body.briefing.lines).toContainEqual(expect.objectContaining({ check: 'clock skew acceptable', outcome: 'fail' }));
    const skewLine = { check: 'clock skew acceptable', detail: expect.stringMatching(/ s from the coordinator's clock/) };
    expect((await nodeList()).find((n) => n.node === 'skewed')).toMatchObject({ ineligible: true, failed_briefing: [skewLine] });

    // Refused as a whole, naming the node and its failed line: nothing is written, not even for the eligible node beside it.
    const head = (await reader.get('/v1/ledger/head')).body;
    const refused = await publishRequest({ skewed: 'x1', applier: 'a-refused' }, 'to the skewed node');
    expectProblem(refused, 422, 'ineligible_nodes');
    expect(refused.body.nodes).toEqual([{ node: 'skewed', failed_briefing: [skewLine] }]);
    expect(refused.body.detail).toMatch(/allow_ineligible: \["skewed"\]/);
    expect((await reader.get('/v1/ledger/head')).body).toEqual(head);

    // Accepted by name: published, and the publish record says who accepted what.
    const p = await publish({ skewed: 'x1' }, 'to the skewed node', { allow_ineligible: ['skewed'] });
    expect(p.accepted_ineligible).toEqual([{ node: 'skewed', failed_briefing: [skewLine] }]);
    const detail = (await reader.get(`/v1/publishes/${p.publish_id}`)).body;
    expect(detail).toMatchObject({ actor: expect.any(String), accepted_ineligible: [{ node: 'skewed', failed_briefing: [skewLine] }] });
    expect(detail.nodes[0]).toMatchObject({ node: 'skewed', ineligible: true, status: 'outstanding' });
    const events = (await reader.get(`/v1/ledger/events?after=${head.position}`)).body.items;
    expect(events.find((e: { type: string }) => e.type === 'publish_recorded')).toMatchObject({
      data: { accepted_ineligible: [{ node: 'skewed' }] },
      meta: { actor: detail.actor },
    });
    // Retiring an ineligible node needs no acceptance.
    expect((await admin.post('/v1/nodes/skewed/retire', { message: 'gone' })).status).toBe(201);

    // Enrolling again with a sound profile clears it, and publishes go through without accepting anything.
    await enrol('skewed');
    expect((await nodeList()).find((n) => n.node === 'skewed')).toMatchObject({ ineligible: false, failed_briefing: [] });
    expect((await publish({ skewed: 'x2' }, 'skewed is sound again')).accepted_ineligible).toBeUndefined();
  });

  it('hands a re-enrolling node the recovery copy of what it had installed and the host resources it owns', async () => {
    await publish({ keeper: 'k1' }, 'keeper');
    await enrol('keeper');
    const owned = {
      files: { '/etc/app.conf': { sha256: 'a'.repeat(64), original: false } },
      packages: { hello: { manager: 'apt', version: '1.0', before: { status: 'installed', version: '0.9' } } },
    };
    expect(
      (await report('keeper', { active_version: 1, result: 'applied', installed: ['/etc/florete/flor.json', '/etc/florete/agent.json'], owned })).status,
    ).toBe(204);
    // A report without a copy (an up-to-date pass) leaves the last one.
    expect((await report('keeper', { active_version: 1, result: 'up_to_date' })).status).toBe(204);
    // A malformed copy is refused with the report, and changes nothing.
    const bad = await report('keeper', {
      active_version: 1,
      result: 'applied',
      owned: { files: { 'etc/app.conf': { sha256: 'a'.repeat(64), original: false } }, packages: {} },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('invalid_body');
    const again = await enrol('keeper');
    expect(again.body.installed).toEqual(['/etc/florete/flor.json', '/etc/florete/agent.json']);
    expect(again.body.owned).toEqual(owned);
  });

  it("revokes a retired node's credential once it reports the final empty set applied", async () => {
    await publish({ goner: 'g1' }, 'goner');
    await enrol('goner');
    const retired = await admin.post('/v1/nodes/goner/retire', { message: 'decommissioned' });
    expect(retired.body.changed).toEqual([{ node: 'goner', from: 1, to: 2 }]);
    expect((await nodes.goner.get('/v1/nodes/goner/bundle')).status).toBe(200);
    expect((await report('goner', { active_version: 2, result: 'applied', installed: [] })).status).toBe(204);
    expect((await nodes.goner.get('/v1/nodes/goner/bundle')).status).toBe(401);
    expect((await nodeList()).find((n) => n.node === 'goner')).toMatchObject({ state: 'retired', credential: 'revoked', convergence: 'converged' });
  });
  it('pages the fleet in name order with a cursor, searching by name, and filters within pages', async () => {
    // Known in four ways: a head, a status, a credential, a live enrolment token (escapes in the search are literal).
    for (let i = 0; i < 12; i++) await admin.post('/v1/enrolment-tokens', { node: `page-${String(i).padStart(2, '0')}` });
    const everyone = names(await nodeList());
    const walk = async (query: string, limit: number) => {
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      for (let guard = 0; guard < 100; guard++) {
        const r = await reader.get(`/v1/nodes?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status).toBe(200);
        seen.push(...names(r.body.items));
        sizes.push(r.body.items.length);
        cursor = r.body.next_cursor;
        if (cursor === null) return { seen, sizes };
      }
      throw new Error('the cursor never ended');
    };
    // Every node exactly once, in the same order as the unpaged list, at several page sizes.
    for (const limit of [1, 5, 7, 1000]) expect((await walk('', limit)).seen).toEqual(everyone);
    const five = await walk('', 5);
    expect(five.sizes.slice(0, -1).every((n) => n === 5)).toBe(true);
    // A page that ends exactly on the last node says so (no empty page after it).
    expect((await reader.get(`/v1/nodes?limit=${everyone.length}`)).body.next_cursor).toBeNull();
    expect((await walk('&q=page-', 5)).seen).toEqual(everyone.filter((n) => n.includes('page-')));
    expect((await walk('&q=%25', 5)).seen).toEqual([]);
    expect((await walk('&q=_', 5)).seen).toEqual([]);
    // Filters apply inside the scan: pages fill with matching nodes only.
    const enrolled = await walk('&state=enrolled', 2);
    expect(enrolled.seen).toEqual(names(await nodeList('?state=enrolled')));
    // Without limit the answer is the whole list, without a cursor (what retectl status reads).
    expect((await reader.get('/v1/nodes')).body.next_cursor).toBeUndefined();
    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'cursor=Not_A_Name', `q=${'a'.repeat(64)}`]) {
      const r = await reader.get(`/v1/nodes?${bad}`);
      expect({ bad, status: r.status, code: r.body.code }).toEqual({ bad, status: 422, code: 'invalid_query' });
    }
  });

  it('counts a node that went back on its own as reverted, with why, not as superseded by the rollback it caused', async () => {
    await enrol('reverter');
    await publish({ reverter: 'rv1' }, 'reverter: first');
    expect((await report('reverter', { active_version: 1, result: 'applied' })).status).toBe(204);
    const second = await publish({ reverter: 'rv2' }, 'reverter: second');
    expect((await report('reverter', { active_version: 1, target_version: 2, result: 'reverted', error: 'not confirmed within 60 s' })).status).toBe(204);
    const detail = (await reader.get(`/v1/publishes/${second.publish_id}`)).body;
    expect(detail.nodes).toEqual([expect.objectContaining({ node: 'reverter', status: 'reverted', reason: 'not confirmed within 60 s' })]);
    expect(detail.counts).toEqual({ applied: 0, failed: 0, outstanding: 0, reverted: 1, superseded: 0 });
    expect((await reader.get(`/v1/publishes/${second.publish_id}/counts`)).body.counts).toEqual(detail.counts);
    expect((await reader.get(`/v1/publishes/${second.publish_id}/nodes?status=reverted`)).body.items).toEqual(detail.nodes);
  });

  it("shows with each of a node's versions what its agent reported doing with it", async () => {
    await publish({ outcomes: 'o1' }, 'outcome one');
    await enrol('outcomes');
    await publish({ outcomes: 'o2' }, 'outcome two');
    const hotReload = { path: 'hot-reload', answer: 'swapped' };
    expect((await report('outcomes', { active_version: 2, result: 'applied', activation: hotReload })).status).toBe(204);
    const items = (await reader.get('/v1/nodes/outcomes/versions')).body.items;
    expect(items.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(items[0].outcome).toEqual({ result: 'applied', error: null, reported_at: expect.any(String), activation: hotReload });
    expect(items[1].outcome).toBeNull();
  });
});
