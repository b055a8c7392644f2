/**
 * Key rotation benchmark: `keys rotate` writes a trust version and moves the head of every node to
 * the new key (a new kid and ETag each; bundles are signed when fetched) in one transaction. For each size N (default 100, 1,000 and 10,000 nodes) a fresh database on one
 * throwaway PostgreSQL gets a coordinator, a publish of N nodes (blobs uploaded first, outside the
 * timing), then a rotation. It prints both wall times as the client sees them, the rotation's cost
 * per moved head, and the rotation/publish ratio: the publish of the same N nodes in the same
 * run is the baseline.
 *
 *   npm run bench:rotate [-- --sizes 100,1000,10000 --concurrency 8]
 */
import { createHash } from 'node:crypto';
import { runBench, UsageError } from './support/cleanup.js';
import { startCoordinator } from './support/coordinator.js';
import { createDatabase, perSize } from './support/postgres.js';
import { parseCli } from './support/cli.js';
import { HttpClient, mapLimit } from './support/http.js';
import { fmt, formatTable, ms } from './support/table.js';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const nodeName = (i: number): string => `node-${String(i + 1).padStart(5, '0')}`;

interface Result {
  readonly nodes: number;
  readonly publishMs: number;
  readonly rotateMs: number;
  readonly resigned: number;
}

async function measure(serverUrl: string, nodes: number, concurrency: number): Promise<Result> {
  const databaseUrl = await createDatabase(serverUrl, `bench_rotate_${nodes}`);
  const coordinator = await startCoordinator({ databaseUrl, env: { FLORETE_MIRROR: 'off', FLORETE_BODY_LIMIT: String(64 * 1024 * 1024) } });
  const api = new HttpClient(coordinator.url, Math.max(concurrency, 4));
  try {
    const token = coordinator.adminToken;
    const body: { message: string; nodes: Record<string, { artifacts: Record<string, string> }> } = { message: `bench ${nodes}`, nodes: {} };
    const blobs = new Map<string, Buffer>();
    for (let i = 0; i < nodes; i++) {
      const flor = Buffer.from(
        `${JSON.stringify({ node: nodeName(i), listen: [`0.0.0.0:${4000 + (i % 1000)}`], acl: [{ allow: `10.${(i >> 8) & 255}.${i & 255}.0/24` }] }, null, 2)}\n`,
      );
      blobs.set(sha256(flor), flor);
      body.nodes[nodeName(i)] = { artifacts: { 'flor.json': sha256(flor) } };
    }
    await mapLimit([...blobs], concurrency, ([digest, content]) => api.expect([200, 201], 'PUT', `/v1/blobs/${digest}`, { token, body: content }));
    const t0 = performance.now();
    await api.expect(201, 'POST', '/v1/publishes', { token, body });
    const t1 = performance.now();
    const rotation = (await api.expect(201, 'POST', '/v1/keys/rotate', { token })).json<{ resigned: number }>();
    const t2 = performance.now();
    if (rotation.resigned !== nodes) throw new Error(`the rotation moved ${rotation.resigned} heads to the new key, not ${nodes}`);
    return { nodes, publishMs: t1 - t0, rotateMs: t2 - t1, resigned: rotation.resigned };
  } finally {
    api.close();
    await coordinator.stop();
  }
}

async function main(): Promise<void> {
  const { values } = parseCli({ sizes: { type: 'string', default: '100,1000,10000' }, concurrency: { type: 'string', default: '8' } });
  const sizes = values.sizes.split(',').map(Number);
  const concurrency = Number(values.concurrency);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new UsageError('--sizes must be a comma list of positive integers');
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError('--concurrency must be a positive integer');
  const results = await perSize(sizes, (serverUrl, n) => measure(serverUrl, n, concurrency));
  process.stdout.write(
    `${formatTable(
      ['nodes', 'publish (baseline)', 'keys rotate', 'per moved head', 'rotate / publish'],
      results.map((r) => [
        fmt(r.nodes),
        ms(r.publishMs),
        ms(r.rotateMs),
        `${fmt((r.rotateMs * 1000) / r.resigned)} µs`,
        `${fmt(r.rotateMs / r.publishMs, 2)}×`,
      ]),
    )}\n\npublish = POST /v1/publishes of N new nodes (blobs already uploaded); keys rotate = POST /v1/keys/rotate moving those N heads to the new key; both as the client sees them, on one coordinator per size\n`,
  );
}

runBench('bench:rotate', main);
