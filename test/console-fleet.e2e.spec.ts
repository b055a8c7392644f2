import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { agentJson, Fleet, florJson, sleep } from './fixtures/agent/harness.js';
import { seriousViolations } from './support/axe.js';
import { buildFixture } from './support/apt-repo.js';

/**
 * The console's fleet-scale pages in Debian's chromium against a real coordinator whose nodes
 * enrol and report over HTTP as agents do (no agent processes: the reports are chosen, so every
 * status shows): the overview, a publish followed by its counts only with its nodes paged, and
 * the read-only pages for API tokens, signing keys and packages. Every page is checked with
 * axe-core. Screenshots go to test-artifacts/console/, and with FLORETE_DOCS_IMAGES=1 also to
 * docs/images/ for the README.
 */
jest.setTimeout(180_000);

const CHROMIUM = process.env.FLORETE_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = resolve(process.env.FLORETE_TEST_ARTIFACTS ?? 'test-artifacts', 'console');
const DOCS = process.env.FLORETE_DOCS_IMAGES === '1' ? resolve('docs/images') : null;
const web = (i: number) => `web-${String(i).padStart(2, '0')}`;
/** web-01 … web-12 take part; the spares are published but never enrol, so the publish needs two pages. */
const WEB = Array.from({ length: 12 }, (_, i) => web(i + 1));
const SPARES = Array.from({ length: 48 }, (_, i) => `spare-${String(i).padStart(2, '0')}`);
const ALL = [...WEB, ...SPARES];

async function seeText(locator: Locator, pattern: RegExp, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    last = (await locator.count()) > 0 ? await locator.first().innerText() : null;
    if (last !== null && pattern.test(last.replace(/\s+/g, ' '))) return;
    if (Date.now() > deadline) throw new Error(`expected ${pattern} within ${timeoutMs} ms; the element's text was: ${JSON.stringify(last)}`);
    await sleep(100);
  }
}

async function seeCount(locator: Locator, n: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const count = await locator.count();
    if (count === n) return;
    if (Date.now() > deadline) throw new Error(`expected ${n} elements within ${timeoutMs} ms, saw ${count}`);
    await sleep(100);
  }
}

describe('the console at fleet scale, in a real browser', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let readerToken: string;
  let scopedToken: string;
  let browser: Browser;
  let page: Page;
  let work: string;
  let publishId: string;
  const credentials = new Map<string, string>();
  const errors: string[] = [];
  const ui = (hash = '') => `${coordinator.url}/ui/${hash}`;
  const shot = async (name: string) => {
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    if (DOCS) await page.screenshot({ path: join(DOCS, `console-${name}.png`), fullPage: true });
  };
  const report = async (node: string, body: Record<string, unknown>) => {
    const r = await admin.as(credentials.get(node)).post(`/v1/nodes/${node}/reports`, body);
    if (r.status !== 204) throw new Error(`report ${node}: ${r.status} ${r.text}`);
  };
  const tree = (marker: string, nodes: readonly string[]) =>
    Object.fromEntries(nodes.map((n) => [n, { 'agent.json': agentJson(n, 1), 'flor.json': florJson(n, marker) }]));
  const axeClean = async (what: string) => {
    const found = await seriousViolations(page);
    expect({ page: what, violations: found }).toEqual({ page: what, violations: [] });
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)`);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'florete-console-fleet-'));
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
    const fleet = new Fleet(admin);
    readerToken = (await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token;
    scopedToken = (await admin.post('/v1/api-tokens', { name: 'ci-deploy', role: 'publisher', scope: ['web-01'] })).body.token;
    await fleet.publish(tree('one', ALL), 'first rete');
    for (const [i, node] of WEB.slice(0, 10).entries()) {
      const token = await fleet.enrolmentToken(node);
      const agent = i < 7 ? '0.1.0' : '0.2.0';
      const r = await admin.as(undefined).post('/v1/enrol', {
        token,
        profile: { hostname: node, os: 'linux', arch: 'x86_64', agent_version: agent, clock: new Date().toISOString() },
        inventory: {},
      });
      if (r.status !== 201) throw new Error(`enrol ${node}: ${r.status} ${r.text}`);
      credentials.set(node, r.body.credential);
      await report(node, { active_version: 1, result: 'applied', agent_version: agent });
    }
    await fleet.publish(tree('two', ALL), 'open port for metrics');
    publishId = ((await admin.get('/v1/publishes?limit=1')).body.items as { publish_id: string }[])[0].publish_id;
    for (const node of WEB.slice(0, 5)) await report(node, { active_version: 2, result: 'applied' });
    await report(web(6), { active_version: 1, target_version: 2, result: 'failed', error: 'exit 3: unit flor-mesh.service not found' });
    await report(web(7), { active_version: 1, target_version: 2, result: 'reverted', error: 'not confirmed within 60 s: went back to version 1' });
    await report(web(8), { active_version: 2, result: 'applied', stale_since: new Date(Date.now() - 3_600_000).toISOString() });
    // web-09 and web-10 keep reporting version 1: in contact, behind.
    for (const node of [web(9), web(10)]) await report(node, { active_version: 1, result: 'up_to_date' });
    const deb = await buildFixture(work, 'florete-fixture-console', '1.2.0-1', join(work, 'log'));
    const bytes = readFileSync(deb.path);
    const pushed = await admin.request('PUT', `/v1/packages/${createHash('sha256').update(bytes).digest('hex')}`, {
      raw: bytes,
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (pushed.status !== 201) throw new Error(`package push: ${pushed.status} ${pushed.text}`);

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--disable-dev-shm-usage', '--disable-gpu'] });
    const context = await browser.newContext({ timezoneId: 'Asia/Tokyo', locale: 'en-GB', viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
    await page.goto(ui());
    await page.getByLabel('API token').fill(coordinator.adminToken!);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await coordinator?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('answers the counts from the server: the overview, a publish without its nodes, and its nodes a page at a time', async () => {
    const o = (await admin.get('/v1/fleet/overview')).body;
    expect(o).toMatchObject({
      total: 60,
      lifecycle: { enrolled: 10, unmanaged: 50, retired: 0 },
      convergence: { converged: 6, outstanding: 53, failed: 1, unpublished: 0 },
      agent_versions: [
        { version: '0.1.0', nodes: 7 },
        { version: '0.2.0', nodes: 3 },
      ],
      never_contacted: 50,
      attention_counts: { failed: 1, ineligible: 0, stale_checkpoint: 1, behind: 3 },
    });
    expect(o.attention.map((a: { node: string }) => a.node)).toEqual([web(6), web(8), web(7), web(9), web(10)]);
    const c = (await admin.get(`/v1/publishes/${publishId}/counts`)).body;
    expect(c).toMatchObject({ total: 60, counts: { applied: 6, outstanding: 52, failed: 1, reverted: 1, superseded: 0 } });
    expect(c).not.toHaveProperty('changed');
    expect(c.timeline.at(-1)).toMatchObject({ applied: 6, failed: 1, reverted: 1 });
    const first = (await admin.get(`/v1/publishes/${publishId}/nodes?limit=50`)).body;
    expect(first.items).toHaveLength(50);
    const rest = (await admin.get(`/v1/publishes/${publishId}/nodes?limit=50&cursor=${first.next_cursor}`)).body;
    expect([...first.items, ...rest.items].map((n: { node: string }) => n.node)).toEqual([...ALL].sort());
    expect(rest.next_cursor).toBeNull();
    const reverted = (await admin.get(`/v1/publishes/${publishId}/nodes?status=reverted`)).body;
    expect(reverted.items).toEqual([expect.objectContaining({ node: web(7), status: 'reverted', reason: expect.stringContaining('not confirmed') })]);
    // The detail agrees with the counts.
    expect((await admin.get(`/v1/publishes/${publishId}`)).body.counts).toEqual(c.counts);
    // A scoped token sees and counts its own nodes only.
    const scoped = admin.as(scopedToken);
    expect((await scoped.get('/v1/fleet/overview')).body).toMatchObject({ total: 1, convergence: { converged: 1 } });
    expect((await scoped.get(`/v1/publishes/${publishId}/counts`)).body).toMatchObject({ total: 1, counts: { applied: 1, outstanding: 0 } });
    expect((await scoped.get(`/v1/publishes/${publishId}/nodes`)).body.items.map((n: { node: string }) => n.node)).toEqual([web(1)]);
  });

  it('shows the overview: lifecycle, convergence, agent versions, last-contact ages, and the nodes needing attention first', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await seeText(page.locator('.lead'), /^60 nodes/);
    expect(await page.getByRole('img', { name: /^Nodes by convergence/ }).getAttribute('aria-label')).toBe(
      'Nodes by convergence: converged 6, outstanding 53, failed 1, never published 0',
    );
    expect(await page.getByRole('img', { name: /^Enrolled nodes by agent version/ }).getAttribute('aria-label')).toBe(
      'Enrolled nodes by agent version: 0.1.0 7, 0.2.0 3',
    );
    expect(await page.getByRole('img', { name: /^Nodes by age of their last contact/ }).getAttribute('aria-label')).toMatch(
      /^Nodes by age of their last contact: < 1m 10, .* never 50$/,
    );
    const rows = page.locator('table.nodes tbody tr');
    await seeCount(rows, 5);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-node')))).toEqual([web(6), web(8), web(7), web(9), web(10)]);
    await seeText(page.locator(`tr[data-node="${web(6)}"]`), /failed.*exit 3: unit flor-mesh.service not found/);
    await seeText(page.locator(`tr[data-node="${web(8)}"]`), /stale checkpoint/);
    await shot('overview');
    await axeClean('overview');
  });

  it('follows a publish by its counts only, draws its convergence, and pages its nodes from the server', async () => {
    const asked: string[] = [];
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/v1/') || url.pathname.startsWith('/.well-known/')) asked.push(`${url.pathname}${url.search}`);
    });
    await page.goto(ui(`#/publishes/${publishId}`));
    await seeText(page.locator('.progress-state'), /^Converging: 52 of 60 outstanding; refreshing the counts every 2 s\.$/);
    expect(await page.locator('figure.convergence svg.chart').getAttribute('aria-label')).toMatch(/now 6 applied, 1 failed, 1 reverted, 52 outstanding of 60$/);
    // The failed nodes first, with why.
    await seeText(page.getByRole('button', { name: /^failed \(1\)$/ }), /failed/);
    expect(await page.getByRole('button', { name: /^failed \(1\)$/ }).getAttribute('aria-pressed')).toBe('true');
    await seeText(page.locator(`tr[data-node="${web(6)}"]`), /failed exit 3: unit flor-mesh.service not found/);
    await shot('publish-fleet');
    await page.getByRole('button', { name: /^reverted \(1\)$/ }).click();
    await seeText(page.locator(`tr[data-node="${web(7)}"]`), /reverted not confirmed within 60 s/);
    await page.getByRole('button', { name: /^all \(60\)$/ }).click();
    const rows = page.locator('table.nodes tbody tr');
    await seeCount(rows, 50);
    await page.getByRole('button', { name: 'Next →' }).click();
    await seeCount(rows, 10);
    expect(await rows.last().getAttribute('data-node')).toBe(web(12));
    await page.getByRole('button', { name: '← Previous' }).click();
    await seeCount(rows, 50);

    // Left open, it asks for the counts and nothing else.
    asked.length = 0;
    await sleep(5000);
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect(asked.filter((a) => a !== `/v1/publishes/${publishId}/counts`)).toEqual([]);
    // A report moves the counts on the page without the viewer doing anything.
    await report(web(9), { active_version: 2, result: 'applied' });
    await seeText(page.locator('.progress-state'), /^Converging: 51 of 60 outstanding/, 10_000);
    await axeClean('publish');
  });

  it('lists API tokens for an admin, never a secret, and tells a reader it needs an admin', async () => {
    await page.goto(ui('#/tokens'));
    await seeText(page.locator('tr[data-token="auditor"]'), /auditor \S+ reader every node active/);
    await seeText(page.locator('tr[data-token="ci-deploy"]'), /ci-deploy \S+ publisher web-01 active/);
    expect(await page.locator('main').innerText()).not.toContain(readerToken);
    await shot('tokens');
    await axeClean('tokens');
    await page.evaluate(`sessionStorage.setItem('florete.console.token', ${JSON.stringify(readerToken)})`);
    await page.reload();
    await seeText(page.locator('.notice'), /Only an admin token lists API tokens.*retectl token create --role admin --name NAME/);
    await axeClean('tokens as a reader');
    await page.evaluate(`sessionStorage.setItem('florete.console.token', ${JSON.stringify(coordinator.adminToken!)})`);
  });

  it('shows the signing keys and every trust version', async () => {
    const jwks = (await admin.get('/.well-known/jwks.json')).body as { keys: { kid: string }[] };
    await page.goto(ui('#/keys'));
    await page.reload();
    await seeCount(page.locator('tr[data-kid]'), jwks.keys.length);
    await seeText(page.locator(`tr[data-kid="${jwks.keys[0].kid}"]`), /OKP Ed25519/);
    await seeText(page.locator('tr[data-trust-version="1"]'), /^1 .+ \S{12}/);
    await shot('keys');
    await axeClean('keys');
  });

  it('shows the package repository', async () => {
    await page.goto(ui('#/packages'));
    await seeText(page.locator('tr[data-package="florete-fixture-console"]'), /florete-fixture-console 1\.2\.0-1 all .* B [0-9a-f]{12} .*by admin/);
    await shot('packages');
    await axeClean('packages');
  });

  it('explains every page of the header on its help page, each with the retectl command that shows the same', async () => {
    await page.goto(ui('#/help'));
    await page.getByRole('heading', { name: 'Help', exact: true }).waitFor();
    const nav = await page.locator('header nav a').allInnerTexts();
    const rows = await page.locator('tr[data-view]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-view')));
    expect(rows).toEqual(nav.filter((n) => n !== 'Help'));
    for (const row of await page.locator('tr[data-view] code').allInnerTexts()) expect(row).toMatch(/^retectl /);
    await shot('help');
    await page.locator('tr[data-view="Overview"] a').click();
    await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor();
  });

  it('has no serious or critical accessibility violation on the other pages either', async () => {
    for (const [hash, heading] of [
      ['#/fleet', 'Fleet'],
      [`#/nodes/${web(6)}`, web(6)],
      ['#/publishes', 'Publishes'],
      ['#/rollouts', 'Rollouts'],
      ['#/ledger', 'Ledger and audit'],
      ['#/help', 'Help'],
    ] as const) {
      await page.goto(ui(hash));
      await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
      await sleep(300);
      await axeClean(hash);
    }
    await page.evaluate('sessionStorage.clear()');
    await page.goto(ui());
    await page.getByLabel('API token').waitFor();
    await axeClean('sign in');
    // The check is live: an image without a text alternative is a critical violation it reports.
    await page.evaluate(`document.body.append(Object.assign(document.createElement('img'), { src: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=' }))`);
    expect((await seriousViolations(page)).map((v) => v.id)).toContain('image-alt');
  });

  it('logged no JavaScript error and no policy violation', () => {
    expect(errors).toEqual([]);
  });
});
