import { createHash } from 'node:crypto';
import { tarOf } from './blobs.js';
import { HttpClient } from './http.js';

/** A node's name in the fleet publishFleet sends: its index, from 0. */
export const fleetNode = (i: number): string => `node-${String(i + 1).padStart(6, '0')}`;

/** The tags and groups a publish sends with its nodes (`labels` of the request). */
export type FleetLabels = Record<string, { tags: string[]; groups: string[] }>;

/**
 * N new nodes, each with its own flor.json: blobs in archives of 20,000, then the tree in one POST,
 * with these labels if given. Gives the tree it sent.
 */
export async function publishFleet(
  url: string,
  token: string,
  nodes: number,
  generation = 0,
  labels?: FleetLabels,
): Promise<Record<string, { artifacts: Record<string, string> }>> {
  const api = new HttpClient(url, 4);
  try {
    const tree: Record<string, { artifacts: Record<string, string> }> = {};
    const blobs: [string, Buffer][] = [];
    for (let i = 0; i < nodes; i++) {
      const node = fleetNode(i);
      const content = Buffer.from(
        `${JSON.stringify({ node, listen: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:4433`, mesh: 'bench', generation }, null, 2)}\n`,
      );
      const digest = createHash('sha256').update(content).digest('hex');
      blobs.push([digest, content]);
      tree[node] = { artifacts: { 'flor.json': digest } };
    }
    const bytes = new Map(blobs);
    for (let i = 0; i < blobs.length; i += 20_000)
      await api.expect(200, 'POST', '/v1/blobs', {
        token,
        body: await tarOf(
          blobs.slice(i, i + 20_000).map(([digest]) => digest),
          bytes,
        ),
        headers: { 'content-type': 'application/x-tar' },
      });
    await api.expect(201, 'POST', '/v1/publishes', { token, body: { message: `bench: ${nodes} nodes`, nodes: tree, ...(labels ? { labels } : {}) } });
    return tree;
  } finally {
    api.close();
  }
}
