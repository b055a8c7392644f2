import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { DomainError } from '../common/index.js';
import { loadIneligible } from '../fleet/ineligible.repository.js';
import { briefingFor } from '../identity/briefing.js';
import { rebuildProjections } from '../projections/index.js';
import { readEvents } from './store/read-events.js';

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

const now = new Date('2026-11-30T10:00:00Z');
const profile = { hostname: 'h', os: 'linux', arch: 'x64', agent_version: '0.1.0', clock: now.toISOString() };
const OLD_AGENT = { check: 'agent version supported', detail: 'agent 0.0.9, at least 0.1.0 required' };

describe.each(testDatabases)('ineligible nodes in the ledger on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
  });
  afterEach(async () => {
    await h.close();
  });

  /** The node_status row an enrolment writes, from a real briefing of the given profile. */
  async function enrolled(node: string, agentVersion: string) {
    const briefing = briefingFor({ tokenNode: node, profile: { ...profile, agent_version: agentVersion }, now });
    const status = { enrolled_at: now, briefing: JSON.stringify(briefing), ineligible: briefing.outcome === 'fail' };
    await h.db.kysely
      .insertInto('node_status')
      .values({ node, ...status })
      .onConflict((oc) => oc.column('node').doUpdateSet(status))
      .execute();
  }
  const versionsOf = async (node: string) => (await h.db.kysely.selectFrom('node_versions').select('version').where('node', '=', node).execute()).length;

  it('loads only the flagged nodes among those asked, with their failed lines', async () => {
    await enrolled('alpha', '0.0.9');
    await enrolled('beta', '0.1.0');
    await enrolled('gamma', '0.0.9');
    const found = await loadIneligible(h.db.kysely, ['alpha', 'beta', 'nobody']);
    expect([...found]).toEqual([['alpha', [OLD_AGENT]]]);
  });

  it('refuses a publish giving an ineligible node new content, and writes nothing at all', async () => {
    await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    await enrolled('alpha', '0.0.9');
    const before = await h.head();
    const e = await refusal(h.publish({ alpha: { f: '2' }, beta: { f: '2' } }));
    expect(e.code).toBe('ineligible_nodes');
    expect(e.details).toEqual({ nodes: [{ node: 'alpha', failed_briefing: [OLD_AGENT] }] });
    expect(await h.head()).toEqual(before);
    expect([await versionsOf('alpha'), await versionsOf('beta')]).toEqual([1, 1]);
    // The same tree with alpha unchanged goes through: only nodes a publish would stamp are checked.
    expect((await h.publish({ alpha: { f: '1' }, beta: { f: '2' } })).changed).toEqual([{ node: 'beta', from: 1, to: 2 }]);
  });

  it('records an accepted ineligible node in the ledger event and the publishes row, and rebuilds them alike', async () => {
    await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    await enrolled('alpha', '0.0.9');
    // beta is eligible: accepting it too is harmless and is not recorded.
    const r = await h.publish({ alpha: { f: '2' }, beta: { f: '2' } }, { message: 'accept alpha', allow_ineligible: ['beta', 'alpha'] });
    const accepted = [{ node: 'alpha', failed_briefing: [OLD_AGENT] }];
    expect(r.changed.map((c) => c.node)).toEqual(['alpha', 'beta']);
    expect(r.accepted_ineligible).toEqual(accepted);
    const record = (await readEvents(h.db.kysely, 0, 100)).find((e) => e.type === 'publish_recorded' && e.data.publish_id === r.publish_id)!;
    expect(record).toMatchObject({ data: { accepted_ineligible: accepted }, meta: { actor: 'tester' } });
    const rows = () => h.db.kysely.selectFrom('publishes').select(['publish_id', 'accepted_ineligible']).orderBy('position').execute();
    const incremental = await rows();
    expect(incremental.map((p) => p.accepted_ineligible)).toEqual([null, accepted]);
    await rebuildProjections(h.db.kysely);
    expect(await rows()).toEqual(incremental);
  });

  it('refuses a rollback onto an ineligible node unless accepted, and lets it be retired', async () => {
    await h.publish({ alpha: { f: '1' } });
    await h.publish({ alpha: { f: '2' } });
    await enrolled('alpha', '0.0.9');
    const before = await h.head();
    expect((await refusal(h.rollback('alpha', 1))).code).toBe('ineligible_nodes');
    expect(await h.head()).toEqual(before);
    const r = await h.rollback('alpha', 1, ['alpha']);
    expect(r).toMatchObject({ changed: [{ node: 'alpha', from: 2, to: 3 }], accepted_ineligible: [{ node: 'alpha', failed_briefing: [OLD_AGENT] }] });
    expect((await h.retire('alpha')).changed).toEqual([{ node: 'alpha', from: 3, to: 4 }]);
  });

  it('no longer refuses a node once it enrols again with a briefing that passes', async () => {
    await enrolled('alpha', '0.0.9');
    expect((await refusal(h.publish({ alpha: { f: '1' } }))).code).toBe('ineligible_nodes');
    await enrolled('alpha', '0.1.0');
    expect((await h.publish({ alpha: { f: '1' } })).changed).toEqual([{ node: 'alpha', from: 0, to: 1 }]);
  });
});
