import { HeadSetsPage, HeadsPage, NodeList } from '#contracts';
import type { z } from 'zod';
import type { CoordinatorClient } from './client.js';
import { refusedKey } from './errors.js';

/** Nodes asked for a page at a time, following the cursor: a 100,000-node fleet is never one answer. */
export const NODE_PAGE = 1000;
/** Heads are digests only, so a page holds more of them. */
export const HEAD_PAGE = 10_000;

/** Every node of the listing (with the filter's query, `?…` or empty), following next_cursor. */
export async function listNodes(client: CoordinatorClient, query = ''): Promise<z.infer<typeof NodeList>['items']> {
  const items: z.infer<typeof NodeList>['items'] = [];
  let cursor: string | null | undefined;
  do {
    const page = `limit=${NODE_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const { body } = await client.call('GET', `/v1/nodes${query ? `${query}&${page}` : `?${page}`}`, NodeList);
    items.push(...body.items);
    // A coordinator that ignores the limit answers everything at once, without a cursor.
    cursor = body.next_cursor;
  } while (cursor);
  return items;
}

/** Every page of GET /v1/heads with this query, following next_cursor, with the position each was read at. */
async function headPages<T>(
  client: CoordinatorClient,
  schema: z.ZodType<{ items: T[]; next_cursor: string | null; position?: number | undefined }>,
  query: string,
): Promise<{ items: T[]; positions: Set<number | undefined> }> {
  const items: T[] = [];
  const positions = new Set<number | undefined>();
  let cursor: string | null = null;
  do {
    const { body }: { body: { items: T[]; next_cursor: string | null; position?: number | undefined } } = await client.call(
      'GET',
      `/v1/heads?limit=${HEAD_PAGE}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      schema,
    );
    items.push(...body.items);
    positions.add(body.position);
    cursor = body.next_cursor;
  } while (cursor);
  return { items, positions };
}

/**
 * Every node head as digests (no artifact contents), or those of the nodes in these buckets,
 * following next_cursor; with the ledger position each page was read at (undefined from a
 * coordinator that does not say).
 */
export function listHeadDigests(
  client: CoordinatorClient,
  buckets?: readonly number[],
): Promise<{ items: z.infer<typeof HeadsPage>['items']; positions: Set<number | undefined> }> {
  return headPages(client, HeadsPage, buckets ? `&buckets=${buckets.join(',')}` : '');
}

/**
 * The set digests of the heads of the nodes in these buckets, without their artifacts (a fifth of
 * the bytes), as listHeadDigests pages them. A coordinator that does not know `artifacts=false`
 * refuses the query: asked again without it, its artifacts are set aside.
 */
export async function listHeadSets(
  client: CoordinatorClient,
  buckets: readonly number[],
): Promise<{ items: z.infer<typeof HeadSetsPage>['items']; positions: Set<number | undefined> }> {
  const only = `&buckets=${buckets.join(',')}`;
  try {
    return await headPages(client, HeadSetsPage, `${only}&artifacts=false`);
  } catch (e) {
    if (refusedKey(e, 'invalid_query', 'artifacts')) return headPages(client, HeadSetsPage, only);
    throw e;
  }
}
