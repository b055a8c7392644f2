/**
 * bench:console: the console's publish page for a 10,000-node publish against the same page for a
 * 10-node one, in Debian's chromium (playwright-core) against the built coordinator.
 *
 * 1. Two publishes: `--small` nodes (the baseline) and `--nodes` nodes. Of each, a tenth of the
 *    nodes (at most `--reporting`) enrol over HTTP and report the second version applied, one failed,
 *    so the page has counts of every kind to draw and a node list to page.
 * 2. Each page is opened `--rounds` times in a fresh tab signed in with the admin token; the time is
 *    from navigation to the page showing its counts, its convergence chart and the first page of
 *    its nodes (the figure the issue bounds at 1 s for 10,000 nodes).
 * 3. The 10,000-node page is then left open `--watch` seconds: every request it makes is counted by
 *    path, with the bytes of each answer, to show it polls its counts and nothing else.
 * 4. The API itself: GET /v1/publishes/{id}/counts (what the page and `publish --wait` poll) against
 *    GET /v1/publishes/{id} (the whole detail), time and size, for both publishes; each counts ask
 *    800 ms after the last, so none is answered from the reading the coordinator reuses for 750 ms.
 *
 * Not a test: nothing asserts a time. Exit 1 only on a wrong answer (counts that do not add up, a
 * page that asks for more than its counts while open).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { parseCli } from './support/cli.js';
import { HttpClient, mapLimit } from './support/http.js';
import { uploadBlobs } from './support/blobs.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const CHROMIUM = process.env.FLORETE_CHROMIUM ?? '/usr/bin/chromium';

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

async function main(): Promise<void> {
  const { values } = parseCli({
    pglite: { type: 'boolean', default: false },
    nodes: { type: 'string', default: '10000' },
    small: { type: 'string', default: '10' },
    reporting: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '5' },
    watch: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '32' },
  });
  const int = (name: keyof typeof values, min: number): number => {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < min) throw new UsageError(`--${name} must be an integer of at least ${min}`);
    return v;
  };
  const big = int('nodes', 2);
  const small = int('small', 2);
  const reportingMax = int('reporting', 1);
  const rounds = int('rounds', 1);
  const watchSeconds = int('watch', 1);
  const concurrency = int('concurrency', 1);
  if (!existsSync(CHROMIUM)) throw new UsageError(`${CHROMIUM} is missing: install Debian's chromium, or set FLORETE_CHROMIUM`);

  let databaseUrl: string | undefined;
  let database = 'PGlite (embedded)';
  if (!values.pglite) {
    say('starting a throwaway PostgreSQL');
    databaseUrl = (await startThrowawayPostgres()).url;
    database = 'PostgreSQL (throwaway, fsync=off)';
  }
  say('starting the coordinator');
  const coordinator = await startCoordinator({ databaseUrl, env: { FLORETE_ANON_RATE_LIMIT: '0', FLORETE_MIRROR: 'off' } });
  const api = new HttpClient(coordinator.url, concurrency);
  onCleanup(() => api.close());
  const admin = coordinator.adminToken;
  const problems: string[] = [];

  /** Publishes generation `g` of these nodes (uploading the blobs it lacks as retectl does) and answers the publish id. */
  const publish = async (names: readonly string[], g: number, message: string): Promise<string> => {
    const blobs = new Map<string, Buffer>();
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const name of names) {
      const content = Buffer.from(`${JSON.stringify({ node: name, generation: g, listen: ['0.0.0.0:4000'], acl: [{ deny: '0.0.0.0/0' }] }, null, 2)}\n`);
      const sha = createHash('sha256').update(content).digest('hex');
      blobs.set(sha, content);
      nodes[name] = { artifacts: { 'flor.json': sha } };
    }
    await uploadBlobs(api, admin, blobs);
    return (await api.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message, nodes } })).json<{ publish_id: string }>().publish_id;
  };

  /** A fleet of `n` nodes: two publishes, a tenth enrolled and reporting the second applied (one failed). Answers the second publish. */
  const fleet = async (prefix: string, n: number): Promise<{ id: string; reporting: number }> => {
    const names = Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
    say(`${prefix}: publishing ${fmt(n)} nodes`);
    await publish(names, 1, `${prefix}: first`);
    const reporting = names.slice(0, Math.max(2, Math.min(reportingMax, Math.ceil(n / 10))));
    say(`${prefix}: enrolling ${fmt(reporting.length)} nodes`);
    const credentials = new Map<string, string>();
    await mapLimit(reporting, concurrency, async (node) => {
      const { token } = (await api.expect(201, 'POST', '/v1/enrolment-tokens', { token: admin, body: { node } })).json<{ token: string }>();
      const { credential } = (
        await api.expect(201, 'POST', '/v1/enrol', {
          body: { token, profile: { hostname: node, os: 'linux', arch: 'x86_64', agent_version: '0.1.0', clock: new Date().toISOString() }, inventory: {} },
        })
      ).json<{ credential: string }>();
      credentials.set(node, credential);
    });
    const id = await publish(names, 2, `${prefix}: second`);
    say(`${prefix}: ${fmt(reporting.length)} nodes report`);
    await mapLimit(reporting, concurrency, async (node, i) => {
      const body =
        i === 0 ? { active_version: 1, target_version: 2, result: 'failed', error: 'bench: a failure to list' } : { active_version: 2, result: 'applied' };
      await api.expect(204, 'POST', `/v1/nodes/${node}/reports`, { token: credentials.get(node)!, body });
    });
    return { id, reporting: reporting.length };
  };

  const smallFleet = await fleet('small', small);
  const bigFleet = await fleet('big', big);

  // 4. The API: counts against the whole detail.
  const apiRows: string[][] = [];
  for (const [label, f, n] of [
    ['small', smallFleet, small],
    ['big', bigFleet, big],
  ] as const) {
    const times = { counts: [] as number[], detail: [] as number[] };
    let countsBytes = 0;
    let detailBytes = 0;
    for (let r = 0; r < rounds; r++) {
      // Past the coordinator's reuse of a reading (750 ms): each ask is a reading of its own.
      await sleep(800);
      const c = await api.expect(200, 'GET', `/v1/publishes/${f.id}/counts`, { token: admin });
      times.counts.push(c.ms);
      countsBytes = c.body.byteLength;
      const counts = c.json<{ total: number; counts: Record<string, number> }>();
      const sum = Object.values(counts.counts).reduce((a, b) => a + b, 0);
      if (counts.total !== n || sum !== n || counts.counts.applied !== f.reporting - 1 || counts.counts.failed !== 1)
        problems.push(`${label}: counts ${JSON.stringify(counts.counts)} of ${counts.total}, expected ${n} nodes, ${f.reporting - 1} applied, 1 failed`);
      const d = await api.expect(200, 'GET', `/v1/publishes/${f.id}`, { token: admin });
      times.detail.push(d.ms);
      detailBytes = d.body.byteLength;
    }
    apiRows.push([`${fmt(n)} nodes`, ms(median(times.counts)), fmt(countsBytes), ms(median(times.detail)), fmt(detailBytes)]);
  }

  // The overview of both fleets together, past its 2 s reuse each time.
  const overviewTimes: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await sleep(2100);
    const o = await api.expect(200, 'GET', '/v1/fleet/overview', { token: admin });
    overviewTimes.push(o.ms);
    const total = o.json<{ total: number }>().total;
    if (total !== big + small) problems.push(`the overview counted ${total} nodes, expected ${big + small}`);
  }

  // 2. and 3. The page, in the browser.
  say('starting chromium');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--disable-dev-shm-usage', '--disable-gpu'] });
  onCleanup(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(`sessionStorage.setItem('florete.console.token', ${JSON.stringify(admin)})`);
  const open = async (id: string) => {
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${coordinator.url}/ui/#/publishes/${id}`);
    await page.locator('.progress-state').waitFor();
    await page.locator('figure.convergence svg.chart').waitFor();
    await page.locator('table.nodes tbody tr').first().waitFor();
    return { page, ms: performance.now() - started };
  };
  const pageRows: string[][] = [];
  const medians: number[] = [];
  for (const [label, f, n] of [
    ['small', smallFleet, small],
    ['big', bigFleet, big],
  ] as const) {
    const times: number[] = [];
    // One warm-up load: the browser's first start and the console's assets are not the page's cost.
    await (await open(f.id)).page.close();
    for (let r = 0; r < rounds; r++) {
      const { page, ms: t } = await open(f.id);
      times.push(t);
      await page.close();
    }
    say(`${label}: ${times.map((t) => ms(t)).join(', ')}`);
    medians.push(median(times));
    pageRows.push([`${fmt(n)} nodes`, ms(median(times)), ms(Math.max(...times))]);
  }

  const { page } = await open(bigFleet.id);
  const asked = new Map<string, { n: number; bytes: number }>();
  page.on('response', async (res) => {
    const url = new URL(res.url());
    if (!url.pathname.startsWith('/v1/')) return;
    const key = url.pathname.replace(bigFleet.id, '{id}') + (url.search ? ' ?…' : '');
    const body = await res.body().catch(() => Buffer.alloc(0));
    const seen = asked.get(key) ?? { n: 0, bytes: 0 };
    asked.set(key, { n: seen.n + 1, bytes: seen.bytes + body.byteLength });
  });
  await sleep(watchSeconds * 1000);
  await page.close();
  for (const key of asked.keys()) if (key !== '/v1/publishes/{id}/counts') problems.push(`the open page asked ${key} while it was left open`);

  const ratio = medians[1] / medians[0];
  const lines = [
    `bench:console: the publish page (#/publishes/{id}) for a ${fmt(big)}-node publish against a ${fmt(small)}-node one; ${database}; chromium ${browser.version()}`,
    `${fmt(bigFleet.reporting)} and ${fmt(smallFleet.reporting)} nodes reported (one failed each); ${rounds} rounds after a warm-up load`,
    '',
    formatTable(['publish', 'page shown (median)', 'max'], pageRows),
    '',
    `page shown: navigation → counts, convergence chart and the first page of nodes rendered; ${fmt(big)} nodes / ${fmt(small)} nodes = ${fmt(ratio, 2)} (target: ${fmt(big)} nodes ≤ 1,000 ms)`,
    '',
    `requests the ${fmt(big)}-node page made while left open ${watchSeconds} s:`,
    formatTable(
      ['path', 'requests', 'bytes'],
      [...asked].map(([k, v]) => [k, fmt(v.n), fmt(v.bytes)]),
    ),
    '',
    formatTable(['publish', 'GET …/counts (median)', 'bytes', 'GET /v1/publishes/{id} (median)', 'bytes'], apiRows),
    '',
    `GET /v1/fleet/overview over all ${fmt(big + small)} nodes: median ${ms(median(overviewTimes))}, max ${ms(Math.max(...overviewTimes))}`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) process.exitCode = 1;
  await browser.close();
  await coordinator.stop();
}

runBench('bench:console', main);
