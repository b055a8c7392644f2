import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  sleep,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';

/**
 * The web console in Debian's chromium (driven by playwright-core) against a real coordinator with
 * real agents: what an admin or an auditor does with it, from signing in to following a publish
 * until the fleet converged. Screenshots of each page are kept in test-artifacts/console/.
 */
jest.setTimeout(180_000);

const CHROMIUM = process.env.FLORETE_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = resolve(process.env.FLORETE_TEST_ARTIFACTS ?? 'test-artifacts', 'console');
const NODES = ['alpha', 'beta', 'gamma'] as const;
/** A viewer far from UTC, so a date shown in UTC instead of the viewer's zone cannot pass. */
const VIEWER_ZONE = 'Asia/Tokyo';

const tree = (marker: string, only: readonly string[] = NODES) =>
  Object.fromEntries(only.map((n) => [n, { 'agent.json': agentJson(n, 1), 'flor.json': florJson(n, marker) }]));

/** Evaluated in the page: the focused element's text and whether its focus ring is drawn. */
const FOCUSED =
  '({ tag: document.activeElement.tagName, text: document.activeElement.textContent, outline: getComputedStyle(document.activeElement).outlineStyle })';

/** Waits until the element's text matches, and fails with the text it last had. */
async function seeText(locator: Locator, pattern: RegExp, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    last = (await locator.count()) > 0 ? await locator.first().innerText() : null;
    if (last !== null && pattern.test(last.replace(/\s+/g, ' '))) return;
    if (Date.now() > deadline) {
      const body = last === null ? ` The page said: ${JSON.stringify((await locator.page().locator('body').innerText()).slice(0, 600))}` : '';
      throw new Error(
        `expected ${pattern} within ${timeoutMs} ms; the element's text was: ${last === null ? '(no such element)' : JSON.stringify(last)}.${body}`,
      );
    }
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

describe('web console in a real browser', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let fleet: Fleet;
  let readerToken: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const errors: string[] = [];
  const failedLoads: string[] = [];
  const files: Record<string, AgentFiles> = {};
  const agents: Record<string, AgentProcess> = {};
  let secondPublish: string;

  const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const ui = (hash = '') => `${coordinator.url}/ui/${hash}`;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
    mkdirSync(SHOTS, { recursive: true });
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
    fleet = new Fleet(admin);
    readerToken = (await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token;
    for (const node of NODES) {
      files[node] = agentFiles('supervise');
      const r = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(node), ...files[node].args]);
      if (r.code !== 0) throw new Error(`enrol ${node}: ${r.stdout}${r.stderr}`);
    }
    await fleet.publish(tree('one'), 'first rollout');
    for (const node of NODES) agents[node] = await startAgent(files[node]);
    for (const node of NODES) await waitFor(`${node} applied 1`, async () => (await fleet.nodeStatus(node))?.applied_version === 1, 60_000);
    await fleet.publish(tree('two'), 'open port for metrics');
    const publishes = (await admin.get('/v1/publishes')).body.items as { publish_id: string }[];
    secondPublish = publishes[0].publish_id;
    for (const node of NODES) await waitFor(`${node} applied 2`, async () => (await fleet.nodeStatus(node))?.applied_version === 2, 60_000);
    // Enough nodes that the fleet takes two pages: enrolment tokens make them known before they run.
    for (let i = 0; i < 55; i++) await fleet.enrolmentToken(`spare-${String(i).padStart(2, '0')}`);

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--disable-dev-shm-usage', '--disable-gpu'] });
    context = await browser.newContext({ timezoneId: VIEWER_ZONE, locale: 'en-GB', viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      // Chromium logs every non-2xx fetch as a failed load; those are checked against what the tests provoke.
      if (m.text().startsWith('Failed to load resource')) failedLoads.push(m.text());
      else errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  });

  afterAll(async () => {
    await browser?.close();
    await stopAllAgents();
    await coordinator?.stop();
    for (const f of Object.values(files)) removeTree(f.root);
  });

  it('serves the console with a policy that allows only its own files, and a 404 problem for anything else', async () => {
    const index = await fetch(ui());
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    const asset = /src="\/ui\/(assets\/[^"]+\.js)"/.exec(html)![1];
    const js = await fetch(ui(asset));
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(ui(asset), { headers: { 'if-none-match': js.headers.get('etag')! } })).status).toBe(304);
    const missing = await fetch(ui('../../etc/passwd'));
    expect(missing.status).toBe(404);
    const traversal = await fetch(`${coordinator.url}/ui/%2e%2e/%2e%2e/package.json`);
    expect(traversal.status).toBe(404);
    expect(traversal.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const bare = await fetch(`${coordinator.url}/ui`, { redirect: 'manual' });
    expect([301, 308]).toContain(bare.status);
    expect(bare.headers.get('location')).toBe('/ui/');
  });

  it('refuses a wrong token with what to do next, then signs in with a reader token', async () => {
    await page.goto(ui());
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await seeText(page.getByRole('alert'), /does not know this token.*retectl token create/);
    await shot('sign-in');
    await page.getByLabel('API token').fill(readerToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    // The header says whose token it is and what it reaches.
    await seeText(page.getByTestId('principal'), /^auditor · reader · every node$/);
    // Kept for this tab only.
    expect(await page.evaluate('[sessionStorage.length, localStorage.length]')).toEqual([1, 0]);
  });

  it('shows the fleet a page at a time, with state, convergence, versions and agent version', async () => {
    const rows = page.locator('table.nodes tbody tr');
    await seeCount(rows, 50);
    const alpha = page.locator('tr[data-node="alpha"]');
    await seeText(alpha, /alpha\s+enrolled\s+converged\s+2\s+2\s+\S+\s+\d+s ago/);
    await shot('fleet');
    await page.getByRole('link', { name: 'Next →' }).click();
    await seeCount(rows, NODES.length + 55 - 50);
    expect(await rows.first().getAttribute('data-node')).toBe('spare-47');
    await page.getByRole('link', { name: '← Previous' }).click();
    await seeCount(rows, 50);
    expect(await rows.first().getAttribute('data-node')).toBe('alpha');
  });

  it('finds a node by name and filters by state', async () => {
    await page.getByLabel('Node name contains').fill('bet');
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.locator('table.nodes tbody tr');
    await seeCount(rows, 1);
    expect(await rows.first().getAttribute('data-node')).toBe('beta');
    await page.getByLabel('Node name contains').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await seeCount(rows, 50);
    // Every change the page makes from here is checked as it happens: the URL says unmanaged while
    // an enrolled node's row is on the page means the old filter's rows were shown under the new one.
    await page.evaluate(`window.staleRows = [];
      window.staleWatch = new MutationObserver(() => {
        if (location.hash.includes('state=unmanaged') && document.querySelector('table.nodes .state-enrolled')) window.staleRows.push(location.hash);
      });
      window.staleWatch.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });`);
    await page.getByLabel('State').selectOption('unmanaged');
    // Done when the page shows a whole page of unmanaged nodes, whatever it showed on the way.
    await seeCount(page.locator('table.nodes tbody tr:has(.state-unmanaged)'), 50);
    expect(await rows.count()).toBe(50);
    expect(await page.locator('tr[data-node="alpha"]').count()).toBe(0);
    expect(await page.evaluate('window.staleWatch.disconnect(), window.staleRows')).toEqual([]);
    await page.getByLabel('Node name contains').fill('no-such-node');
    await page.getByRole('button', { name: 'Search' }).click();
    await seeText(page.locator('.empty'), /No node matches this filter/);
  });

  it("opens a node's history as a timeline, in the viewer's time zone, with how each version was activated", async () => {
    await page.goto(ui('#/fleet?q=beta'));
    await page.getByRole('link', { name: 'beta', exact: true }).click();
    await page.getByRole('heading', { name: 'beta' }).waitFor();
    const versions = page.locator('li.version');
    await seeCount(versions, 2);
    const v2 = page.locator('li.version[data-version="2"]');
    await seeText(v2, /open port for metrics/);
    await seeText(v2, /applied/);
    await seeText(v2, /activation: restart/);
    const recorded = (await admin.get('/v1/nodes/beta/versions')).body.items[0].recorded_at as string;
    const tokyo = new Intl.DateTimeFormat('en-GB', { timeZone: VIEWER_ZONE, hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(new Date(recorded));
    expect(await v2.locator('time').textContent()).toContain(tokyo);
    expect(await v2.locator('time').textContent()).toMatch(/GMT\+9|JST/);
    await shot('node');
  });

  it('diffs two versions side by side', async () => {
    await page.getByRole('link', { name: 'diff with v1' }).click();
    const artifact = page.locator('article.artifact[data-artifact="flor.json"]');
    await artifact.waitFor();
    expect(await page.locator('article.artifact').count()).toBe(1); // agent.json did not change
    const changed = artifact.locator('tr.changed');
    expect(await changed.count()).toBe(1);
    expect(await changed.locator('td.old').textContent()).toContain('"marker": "one"');
    expect(await changed.locator('td.new').textContent()).toContain('"marker": "two"');
    await shot('diff');
    // The same diff from the picker.
    await page.getByLabel('From').selectOption('0');
    await page.getByLabel('To').selectOption('2');
    await page.getByRole('button', { name: 'Compare' }).click();
    await seeCount(page.locator('article.artifact'), 2);
  });

  it('follows a publish until every node has applied it, refreshing by itself', async () => {
    // gamma's agent is stopped first, so the publish is seen outstanding before it converges.
    const { agents } = await stopAgent('gamma');
    const p = await admin.post('/v1/publishes', await publishBody(tree('three'), 'tighten acl'));
    expect(p.status).toBe(201);
    await page.goto(ui(`#/publishes/${p.body.publish_id}`));
    await seeText(page.locator('.progress-state'), /Converging: 1 of 3 outstanding/, 60_000);
    await shot('publish-converging');
    await agents.restart();
    await seeText(page.locator('.progress-state'), /Done: no node is outstanding \(3 applied, 0 failed, 0 reverted, 0 superseded\)/, 60_000);
    expect(await page.locator('.seg-applied').textContent()).toBe('3 applied');
    await shot('publish');
  });

  it('lists publishes, and verifies the ledger and the mirror from the audit page', async () => {
    await nav('Publishes').click();
    await seeCount(page.locator('table.nodes tbody tr'), 3);
    await page.getByRole('link', { name: secondPublish.slice(0, 8) }).click();
    await seeText(page.locator('.progress-state'), /Done/);
    await nav('Ledger and audit').click();
    const head = (await admin.get('/v1/ledger/head')).body;
    await seeText(page.getByTestId('head-position'), new RegExp(`^${head.position}$`));
    await page.getByRole('button', { name: 'Verify the chain', exact: true }).click();
    await seeText(page.locator('.verify').first(), new RegExp(`intact through position ${head.position}`));
    await page.getByRole('button', { name: 'Verify the chain and the mirror' }).click();
    await seeText(page.locator('.verify').nth(1), /intact through position \d+; mirror at position/, 30_000);
    const clone = page.locator('pre code').filter({ hasText: 'git clone' });
    expect(await clone.textContent()).toContain('/audit.git');
    expect(await clone.textContent()).not.toContain(readerToken);
    // The latest signed checkpoint as served, and every agent's held checkpoint agreeing with the ledger.
    const checkpoint = (await admin.get('/v1/ledger/checkpoint')).body;
    await seeText(page.getByTestId('checkpoint'), new RegExp(`^florete\\.ledger/[0-9a-f]{16} ${checkpoint.position} `));
    for (const node of NODES) await seeText(page.locator(`[data-testid="witnesses"] tr[data-node="${node}"]`), /agrees/);
    await shot('ledger');
  });

  it('moves through the page with the keyboard, with focus always visible', async () => {
    await page.goto(ui('#/fleet'));
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    // A page moves focus to its content in an effect that runs after its first paint, so the heading can
    // show before focus moves: wait for the move, or a Tab pressed first is undone by it.
    await page.waitForFunction("document.activeElement?.tagName === 'MAIN'");
    // From there, the first Tab reaches the page's own first control.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(FOCUSED)).toEqual({ tag: 'INPUT', text: '', outline: 'solid' });
    // Backwards from there: the header's controls in reverse order, up to the skip link.
    const seen = [];
    const header = ['Sign out', 'Help', 'Tokens', 'Packages', 'Keys', 'Ledger and audit', 'Rollouts', 'Publishes', 'Fleet', 'Overview', 'Skip to content'];
    for (let i = 0; i < header.length; i++) {
      await page.keyboard.press('Shift+Tab');
      seen.push(await page.evaluate(FOCUSED));
    }
    expect(seen).toEqual(
      header.map((text) => ({
        tag: text === 'Sign out' ? 'BUTTON' : 'A',
        text,
        outline: 'solid',
      })),
    );
    for (let i = 0; i < 3; i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(FOCUSED)).toEqual({ tag: 'A', text: 'Publishes', outline: 'solid' });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Publishes' }).waitFor();
    // The page asks for its list after it first paints: wait for the answer, so no request of this page
    // is still to be made when the next test changes the token under it.
    await seeText(page.locator('main'), /open port for metrics/);
  });

  it('sends a viewer whose token stopped working back to sign in, saying why', async () => {
    await page.evaluate("sessionStorage.setItem('florete.console.token', 'revoked-or-expired')");
    await page.reload();
    // A busy machine (CI runs everything at once) can take long to load the page again.
    await seeText(page.locator('.notice'), /refused your token.*sign in with a current one/, 60_000);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it('logged no JavaScript error and no policy violation on any page, and no failed request but those of the two refused tokens', () => {
    expect(errors).toEqual([]);
    // The wrong token at sign-in; the stopped one twice: the page's request and the header's whoami.
    expect(failedLoads).toEqual([expect.stringContaining('401'), expect.stringContaining('401'), expect.stringContaining('401')]);
  });

  async function stopAgent(node: string) {
    await agents[node].stop();
    return { agents: { restart: async () => void (agents[node] = await startAgent(files[node])) } };
  }

  async function publishBody(t: Record<string, Record<string, string>>, message: string) {
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, f] of Object.entries(t)) {
      nodes[node] = { artifacts: {} };
      for (const [name, content] of Object.entries(f)) nodes[node].artifacts[name] = await admin.putBlob(content);
    }
    return { message, nodes };
  }
});
