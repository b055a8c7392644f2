/**
 * Label buckets after a relabel: what `GET /v1/heads/buckets` costs a coordinator right after one
 * node's tags change, when this coordinator wrote the change (it carries its copy of the recorded
 * labels forward and digests one bucket again) against when another replica on the same database
 * wrote it (it reads every node's labels from the table and digests every bucket): the baseline, in
 * the same run, on the same database.
 *
 * Per size, a fresh database on one throwaway PostgreSQL gets two coordinators (A, and B as a
 * replica) and a publish of N nodes, each with its tags and groups. Each round then relabels one
 * node through B and reads A's label buckets (baseline), and relabels another through A and reads
 * A's label buckets again. After each read both replicas must give the same label buckets, or the
 * benchmark exits 1. It prints the medians of the rounds, and the POST of each relabel as the
 * client sees it (a one-node publish with that node's labels).
 *
 *   npm run bench:labels [-- --sizes 10000,100000 --repeat 5]
 */
import { join } from 'node:path';
import { runBench } from './support/cleanup.js';
import { sizesAndRepeat } from './support/cli.js';
import { startCoordinator } from './support/coordinator.js';
import { HttpClient } from './support/http.js';
import { createDatabase, perSize } from './support/postgres.js';
import { fleetNode, publishFleet, type FleetLabels } from './support/publish-fleet.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const say = (line: string): void => void process.stderr.write(`${line}\n`);
const BODY_LIMIT = 128 * 1024 * 1024;

interface Result {
  readonly nodes: number;
  /** A's label buckets after B relabelled a node: read from the table. */
  readonly fromTable: number[];
  /** A's label buckets after A relabelled a node: carried forward. */
  readonly carried: number[];
  readonly postViaB: number[];
  readonly postViaA: number[];
}

async function measure(serverUrl: string, nodes: number, repeat: number): Promise<Result> {
  const databaseUrl = await createDatabase(serverUrl, `bench_labels_${nodes}`);
  const env = { FLORETE_MIRROR: 'off', FLORETE_BODY_LIMIT: String(BODY_LIMIT) };
  const a = await startCoordinator({ databaseUrl, env });
  const b = await startCoordinator({ databaseUrl, replica: true, env: { ...env, FLORETE_SIGNING_KEYS_FILE: join(a.dataDir, 'keys', 'signing-keys.json') } });
  const token = a.adminToken;
  const apiA = new HttpClient(a.url, 4);
  const apiB = new HttpClient(b.url, 4);
  try {
    const labels: FleetLabels = {};
    for (let i = 0; i < nodes; i++) labels[fleetNode(i)] = { tags: ['web', `site-${i % 50}`], groups: i % 4 === 0 ? ['edge'] : ['fleet'] };
    say(`  publishing ${fmt(nodes)} nodes with their labels`);
    const tree = await publishFleet(a.url, token, nodes, 0, labels);
    const buckets = async (api: HttpClient) => {
      const t = performance.now();
      const answer = (await api.expect(200, 'GET', '/v1/heads/buckets', { token })).json<{ labels: string[] }>();
      return { ms: performance.now() - t, labels: answer.labels };
    };
    const relabel = async (api: HttpClient, node: string, round: number) => {
      const t = performance.now();
      await api.expect([200, 201], 'POST', '/v1/publishes', {
        token,
        body: { message: `relabel ${node}`, nodes: { [node]: tree[node] }, labels: { [node]: { tags: ['web', `moved-${round}`], groups: ['fleet'] } } },
      });
      return performance.now() - t;
    };
    const same = async (after: string) => {
      const [fromA, fromB] = [await buckets(apiA), await buckets(apiB)];
      if (fromA.labels.join() !== fromB.labels.join()) throw new Error(`after ${after}, replicas A and B give different label buckets`);
    };
    // Both replicas work out every bucket once, as after any start.
    await same('the first publish');
    const result: Result = { nodes, fromTable: [], carried: [], postViaB: [], postViaA: [] };
    for (let r = 0; r < repeat; r++) {
      result.postViaB.push(await relabel(apiB, fleetNode((r * 2 * 7919) % nodes), r));
      result.fromTable.push((await buckets(apiA)).ms);
      await same(`B's relabel in round ${r + 1}`);
      result.postViaA.push(await relabel(apiA, fleetNode((r * 2 * 7919 + 1) % nodes), r));
      result.carried.push((await buckets(apiA)).ms);
      await same(`A's relabel in round ${r + 1}`);
      say(`  round ${r + 1}: from the table ${ms(result.fromTable[r])}, carried forward ${ms(result.carried[r])}`);
    }
    return result;
  } finally {
    apiA.close();
    apiB.close();
    await b.stop();
    await a.stop();
  }
}

async function main(): Promise<void> {
  const { sizes, repeat } = sizesAndRepeat('10000,100000', '5');
  const results = await perSize(sizes, (serverUrl, n) => measure(serverUrl, n, repeat));
  process.stdout.write(
    `${formatTable(
      ['nodes', 'buckets, B relabelled (baseline)', 'buckets, A relabelled', 'carried / baseline', 'relabel POST via B', 'relabel POST via A'],
      results.map((r) => [
        fmt(r.nodes),
        ms(median(r.fromTable)),
        ms(median(r.carried)),
        fmt(median(r.carried) / median(r.fromTable), 3),
        ms(median(r.postViaB)),
        ms(median(r.postViaA)),
      ]),
    )}\n\nGET /v1/heads/buckets on replica A right after a one-node relabel written through B (A reads every label from the table) and through A (A carries its copy forward); POSTs as the client sees them; medians of ${repeat} rounds\n`,
  );
}

runBench('bench:labels', main);
