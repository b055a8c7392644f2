import type { Db } from '../db/index.js';
import { testDatabases } from '../../../../test/support/databases.js';
import { convergence, lifecycleState, type NodeFacts } from '../fleet/fleet-state.js';
import { MAX_AGENT_VERSIONS, OTHER_VERSIONS, readFleetGauges, summarise } from './fleet-gauges.js';

const NOW = new Date('2026-06-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

/** One node's rows, written straight into the tables the fleet listing reads. */
interface Seed {
  node: string;
  head?: { version: number; retired?: boolean };
  credentials?: ('live' | 'revoked')[];
  token?: 'live' | 'used' | 'expired';
  status?: { applied_version?: number; last_contact?: Date; agent_version?: string };
  outcomes?: { version: number; result: 'applied' | 'failed' | 'rejected' }[];
}

async function seed(db: Db, nodes: Seed[]): Promise<void> {
  const k = db.kysely;
  for (const n of nodes) {
    if (n.head) {
      await k
        .insertInto('node_heads')
        .values({
          node: n.node,
          version: n.head.version,
          set_digest: 'd',
          retired: n.head.retired ?? false,
          artifacts: '[]',
          kid: 'k',
          etag: 'e',
          position: 1,
          publish_id: 'p',
          updated_at: NOW,
        })
        .execute();
    }
    for (const [i, c] of (n.credentials ?? []).entries()) {
      await k
        .insertInto('node_credentials')
        .values({
          id: `${n.node}-c${i}`,
          node: n.node,
          secret_hash: 'h',
          created_at: NOW,
          revoked_at: c === 'revoked' ? NOW : null,
          revoked_reason: c === 'revoked' ? 'revoked' : null,
        })
        .execute();
    }
    if (n.token) {
      const expires = n.token === 'expired' ? ago(60) : new Date(NOW.getTime() + 3_600_000);
      await k
        .insertInto('enrolment_tokens')
        .values({
          id: `${n.node}-t`,
          node: n.node,
          secret_hash: 'h',
          thumbprint: 't',
          created_by: 'admin',
          created_at: ago(120),
          expires_at: expires,
          used_at: n.token === 'used' ? NOW : null,
        })
        .execute();
    }
    if (n.status) {
      await k
        .insertInto('node_status')
        .values({
          node: n.node,
          enrolled_at: ago(86_400 * 30),
          last_contact: n.status.last_contact ?? null,
          applied_version: n.status.applied_version ?? null,
          agent_version: n.status.agent_version ?? null,
        })
        .execute();
    }
    for (const o of n.outcomes ?? []) {
      await k.insertInto('node_outcomes').values({ node: n.node, version: o.version, result: o.result, error: null, reported_at: NOW }).execute();
    }
  }
}

/** What fleet-state.ts says of one seeded node: the per-node classification the aggregate must agree with. */
function classify(n: Seed): { lifecycle: string; convergence: string } {
  const facts: NodeFacts = {
    head: n.head ? { version: n.head.version, retired: n.head.retired ?? false } : null,
    liveCredentials: (n.credentials ?? []).filter((c) => c === 'live').length,
    revokedCredentials: (n.credentials ?? []).filter((c) => c === 'revoked').length,
    pendingToken: n.token === 'live',
    appliedVersion: n.status?.applied_version ?? null,
    outcomes: (n.outcomes ?? []).map((o) => ({ ...o, error: null })),
  };
  return { lifecycle: lifecycleState(facts), convergence: convergence(facts) ?? 'unpublished' };
}

const FLEET: Seed[] = [
  {
    node: 'conv-by-outcome',
    head: { version: 3 },
    credentials: ['live'],
    status: { last_contact: ago(10), agent_version: '0.2.0' },
    outcomes: [{ version: 3, result: 'applied' }],
  },
  {
    node: 'conv-by-applied',
    head: { version: 3 },
    credentials: ['revoked', 'live'],
    status: { applied_version: 4, last_contact: ago(600), agent_version: '0.2.0' },
  },
  {
    node: 'failed',
    head: { version: 2 },
    credentials: ['live'],
    status: { applied_version: 1, last_contact: ago(7_200), agent_version: '0.1.0' },
    outcomes: [
      { version: 1, result: 'applied' },
      { version: 2, result: 'rejected' },
    ],
  },
  {
    // Runs a version 4 of its own and refused the ledger's version 4 (version_conflict, after a lossy restore).
    node: 'version-conflict',
    head: { version: 4 },
    credentials: ['live'],
    status: { applied_version: 4, last_contact: ago(20), agent_version: '0.2.0' },
    outcomes: [{ version: 4, result: 'rejected' }],
  },
  {
    node: 'outstanding',
    head: { version: 2 },
    credentials: ['live'],
    status: { applied_version: 1, last_contact: ago(86_400 * 3) },
    outcomes: [{ version: 1, result: 'applied' }],
  },
  { node: 'silent', head: { version: 1 }, credentials: ['live'], status: { last_contact: ago(86_400 * 30), agent_version: '0.1.0' } },
  { node: 'never-polled', credentials: ['live'], status: { agent_version: '0.2.0' } },
  { node: 'revoked-only', head: { version: 1 }, credentials: ['revoked'], status: { last_contact: ago(30) } },
  { node: 'retired', head: { version: 5, retired: true }, credentials: ['live'], status: { last_contact: ago(10), agent_version: '0.1.0' } },
  { node: 'published-only', head: { version: 1 } },
  { node: 'token-only', token: 'live' },
  { node: 'token-used', token: 'used', head: { version: 1 } },
  { node: 'token-expired', token: 'expired' },
];

describe.each(testDatabases)('the fleet gauges on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = await database.open();
    await seed(db, FLEET);
  });
  afterAll(async () => db?.close());

  it('count every node as fleet-state.ts classifies it, one series per state', async () => {
    const expected = new Map<string, number>();
    // An expired token alone is not a node the fleet listing shows.
    for (const n of FLEET.filter((s) => s.node !== 'token-expired')) {
      const c = classify(n);
      expected.set(`${c.lifecycle}/${c.convergence}`, (expected.get(`${c.lifecycle}/${c.convergence}`) ?? 0) + 1);
    }
    const gauges = await readFleetGauges(db.kysely, NOW);
    const got = new Map(gauges.nodes.map((n) => [`${n.lifecycle}/${n.convergence}`, n.count]));
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
    // The cases the seeds were written for, spelled out so a wrong classification on both sides still shows.
    expect(Object.fromEntries(got)).toEqual({
      'enrolled/converged': 2,
      'enrolled/failed': 2,
      'enrolled/outstanding': 3,
      'enrolled/unpublished': 1,
      'retired/outstanding': 1,
      'unmanaged/outstanding': 2,
      'unmanaged/unpublished': 1,
    });
  });

  it('bucket enrolled nodes by the age of their last contact, each bucket present even when empty', async () => {
    const gauges = await readFleetGauges(db.kysely, NOW);
    expect(Object.fromEntries(gauges.contactAge.map((c) => [c.age, c.count]))).toEqual({ '5m': 3, '1h': 1, '1d': 1, '7d': 1, older: 1, never: 1 });
  });

  it('count enrolled nodes by agent version, unknown when the agent never said', async () => {
    const gauges = await readFleetGauges(db.kysely, NOW);
    expect(Object.fromEntries(gauges.agentVersions.map((v) => [v.version, v.count]))).toEqual({ '0.1.0': 2, '0.2.0': 4, unknown: 2 });
  });
});

describe('the agent version series', () => {
  it(`are bounded: past ${MAX_AGENT_VERSIONS} versions the rarest are summed as ${OTHER_VERSIONS}`, () => {
    const rows = Array.from({ length: MAX_AGENT_VERSIONS + 10 }, (_, i) => ({
      lifecycle: 'enrolled',
      convergence: 'converged',
      contact: '5m',
      agent_version: `1.0.${i}`,
      nodes: i + 1,
    }));
    const versions = summarise(rows).agentVersions;
    expect(versions).toHaveLength(MAX_AGENT_VERSIONS);
    expect(versions.reduce((s, v) => s + v.count, 0)).toBe(rows.reduce((s, r) => s + r.nodes, 0));
    // The commonest are kept by name: 1.0.0 (one node) is among the rarest, summed away.
    expect(versions.find((v) => v.version === '1.0.0')).toBeUndefined();
    expect(versions.find((v) => v.version === `1.0.${MAX_AGENT_VERSIONS + 9}`)?.count).toBe(MAX_AGENT_VERSIONS + 10);
    expect(versions.find((v) => v.version === OTHER_VERSIONS)?.count).toBe(rows.slice(0, 11).reduce((s, r) => s + r.nodes, 0));
  });
});
