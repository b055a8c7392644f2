import type { CoordinatorClient } from './client.js';
import { RetectlError } from './errors.js';
import { publishCounts, publishNodes } from './publish-wait.js';

const ID = '6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b';
const counts = { applied: 1, outstanding: 2, failed: 1, reverted: 1, superseded: 0 };
const row = (node: string, status: string) => ({ node, from: 1, to: 2, status, reason: null, ineligible: false, last_contact: null, activation: null });
const summary = {
  publish_id: ID,
  position: 7,
  kind: 'publish',
  actor: 'admin',
  message: 'm',
  recorded_at: '2026-01-01T00:00:00.000Z',
  unchanged: 0,
  accepted_ineligible: [],
};

/** A coordinator answering GET paths from a table; a missing path answers as a coordinator without that route does. */
function fake(routes: Record<string, unknown>, asked: string[] = []): CoordinatorClient {
  return {
    call: async (_method: string, path: string, schema: { parse(v: unknown): unknown }) => {
      asked.push(path);
      if (!(path in routes)) throw new RetectlError('not_found', `no route ${path}`, { problem: { code: 'not_found' } });
      const body = routes[path];
      if (body instanceof Error) throw body;
      return { status: 200, body: schema.parse(body) };
    },
  } as unknown as CoordinatorClient;
}

describe('publish --wait asks the coordinator for counts', () => {
  it('polls the counts route, never the detail', async () => {
    const asked: string[] = [];
    const client = fake({ [`/v1/publishes/${ID}/counts`]: { ...summary, total: 5, counts, timeline: [] } }, asked);
    expect(await publishCounts(client, ID)).toEqual(counts);
    expect(asked).toEqual([`/v1/publishes/${ID}/counts`]);
  });

  it('falls back to the detail on a coordinator older than the counts route, reading a missing reverted as 0', async () => {
    const { reverted: _r, ...old } = counts;
    const client = fake({ [`/v1/publishes/${ID}`]: { ...summary, changed: [], nodes: [], counts: old } });
    expect(await publishCounts(client, ID)).toEqual({ ...counts, reverted: 0 });
  });

  it('does not fall back for a publish the coordinator does not know', async () => {
    const unknown = new RetectlError('not_found', `no publish ${ID}`, { problem: { code: 'unknown_publish' } });
    await expect(publishCounts(fake({ [`/v1/publishes/${ID}/counts`]: unknown }), ID)).rejects.toBe(unknown);
  });

  it('reads the nodes not at the publish a page at a time, status by status, up to the limit, with how many there are', async () => {
    const asked: string[] = [];
    const page = (items: unknown[], next: string | null) => ({ items, next_cursor: next, counts, total: 5 });
    const client = fake(
      {
        [`/v1/publishes/${ID}/nodes?limit=3&status=failed`]: page([row('a', 'failed')], null),
        [`/v1/publishes/${ID}/nodes?limit=2&status=outstanding`]: page([row('b', 'outstanding')], 'b'),
        [`/v1/publishes/${ID}/nodes?limit=1&status=outstanding&cursor=b`]: page([row('c', 'outstanding')], null),
      },
      asked,
    );
    const { rows, total } = await publishNodes(client, ID, ['failed', 'outstanding'], 3);
    expect(rows.map((r) => r.node)).toEqual(['a', 'b', 'c']);
    expect(total).toBe(counts.failed + counts.outstanding);
    expect(asked).toHaveLength(3);
  });

  it('filters the detail on a coordinator without the node pages', async () => {
    const nodes = [row('a', 'applied'), row('b', 'reverted'), row('c', 'outstanding')];
    const client = fake({ [`/v1/publishes/${ID}`]: { ...summary, changed: [], nodes, counts } });
    const { rows, total } = await publishNodes(client, ID, ['reverted', 'outstanding'], 1);
    expect(rows.map((r) => r.node)).toEqual(['b']);
    expect(total).toBe(2);
  });
});
