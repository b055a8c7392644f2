import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { florJson, sleep } from './fixtures/agent/harness.js';

/**
 * The console's rollout pages in Debian's chromium against a real coordinator whose rollout driver
 * ticks every 250 ms. The nodes never report, so the rollout waits at its canary until an operator
 * acts: the list, the rollout's plan, waves and timeline, following it without rendering again while
 * nothing changes, a reader refused with the coordinator's message, a publisher pausing, resuming,
 * promoting and aborting from the page (each in the timeline under the publisher's name), the links
 * between a wave's publish and its rollout, and the following stopping when the page is left or the
 * rollout is over. Screenshots in test-artifacts/console/.
 */
jest.setTimeout(240_000);

const CHROMIUM = process.env.FLORETE_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = resolve(process.env.FLORETE_TEST_ARTIFACTS ?? 'test-artifacts', 'console');
const NODES = ['web-1', 'web-2', 'web-3', 'web-4', 'web-5'] as const;
const VIEWER_ZONE = 'Asia/Tokyo';
/** The page asks again every 3 s while the rollout runs; this is more than two of its intervals. */
const TWO_REFRESHES_MS = 7_500;

interface View {
  id: string;
  status: string;
  actor: string;
  released: number;
  reason: string | null;
  timeline: { type: string; actor: string; reason?: string; publish_id?: string; wave?: number }[];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function seeText(locator: Locator, pattern: RegExp, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    last = (await locator.count()) > 0 ? await locator.first().innerText() : null;
    if (last !== null && pattern.test(last.replace(/\s+/g, ' '))) return;
    if (Date.now() > deadline) {
      const body = last === null ? ` The page said: ${JSON.stringify((await locator.page().locator('body').innerText()).slice(0, 800))}` : '';
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

describe('web console: rollouts, in a real browser', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let readerToken: string;
  let publisherToken: string;
  let browser: Browser;
  let page: Page;
  let rolloutId: string;
  let short: string;
  let plainPublish: string;
  let adminName: string;
  const errors: string[] = [];
  const failedLoads: string[] = [];
  /** Every GET of this rollout's own route the page made, with when. */
  const reads: number[] = [];

  const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const ui = (hash = '') => `${coordinator.url}/ui/${hash}`;
  const rollout = async (): Promise<View> => (await admin.get(`/v1/rollouts/${rolloutId}`)).body as View;
  const status = () => page.getByTestId('rollout-status');
  const events = () => page.locator('ol.timeline li.event');
  const wave = (i: number) => page.locator(`table.waves tr[data-wave="${i}"]`);
  const button = (name: string) => page.locator('section.actions').getByRole('button', { name, exact: true });
  const tokyo = (iso: string) =>
    new Intl.DateTimeFormat('en-GB', { timeZone: VIEWER_ZONE, hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(new Date(iso));

  async function publish(message: string, marker: string, only: readonly string[], extra: Record<string, unknown> = {}) {
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const n of only) nodes[n] = { artifacts: { 'flor.json': await admin.putBlob(florJson(n, marker)) } };
    const r = await admin.post('/v1/publishes', { message, nodes, ...extra });
    if (r.status !== 201) throw new Error(`publish: ${r.status} ${r.text}`);
    return r.body as { publish_id: string; rollout?: { id: string; waves: number[]; released: number } };
  }

  async function signIn(token: string) {
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
    mkdirSync(SHOTS, { recursive: true });
    coordinator = await startCoordinatorProcess({ env: { FLORETE_ROLLOUT_TICK_MS: '250', FLORETE_MIRROR: 'off' } });
    admin = new Client(coordinator.url, coordinator.adminToken);
    readerToken = (await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token;
    publisherToken = (await admin.post('/v1/api-tokens', { name: 'ana', role: 'publisher' })).body.token;
    plainPublish = (await publish('first content', 'one', NODES)).publish_id;
    // Nobody runs these nodes: the canary never confirms, so the rollout waits at it.
    const r = await publish('open port for metrics', 'two', NODES, {
      rollout: { canary: ['web-1'], waves: [50, 100], bake_seconds: 600, failure_budget: { count: 1 }, confirm_share: 0.5, on_halt: 'hold' },
    });
    expect(r.rollout).toEqual({ id: expect.any(String), waves: [1, 2, 2], released: 1 });
    rolloutId = r.rollout!.id;
    short = rolloutId.slice(0, 8);
    adminName = (await rollout()).actor;

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--disable-dev-shm-usage', '--disable-gpu'] });
    const context = await browser.newContext({ timezoneId: VIEWER_ZONE, locale: 'en-GB', viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (m.text().startsWith('Failed to load resource')) failedLoads.push(m.text());
      else errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
    page.on('request', (req) => {
      if (req.method() === 'GET' && new URL(req.url()).pathname === `/v1/rollouts/${rolloutId}`) reads.push(Date.now());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await coordinator?.stop();
  });

  it('lists the rollout from the navigation with its status, waves released, nodes, message and who; filters by status', async () => {
    await page.goto(ui());
    await signIn(readerToken);
    await nav('Rollouts').click();
    await page.getByRole('heading', { name: 'Rollouts' }).waitFor();
    const row = page.locator(`tr[data-rollout="${rolloutId}"]`);
    await seeText(row, new RegExp(`^${short} running 1 of 3 5 open port for metrics ${adminName} .*GMT\\+9`));
    expect(await row.locator('progress').getAttribute('aria-label')).toBe('1 of 3 waves released');
    await page.getByLabel('Status').selectOption('completed');
    await seeText(page.locator('.empty'), /^No rollout is completed\.$/);
    expect(await page.evaluate('location.hash')).toBe('#/rollouts?status=completed');
    await page.getByLabel('Status').selectOption('running');
    await seeCount(page.locator('table.rollouts tbody tr'), 1);
    await shot('rollouts');
  });

  it('opens the rollout: its plan, each wave as a stacked bar with the canary current, and the timeline', async () => {
    await page.getByRole('link', { name: short }).click();
    await page.getByRole('heading', { name: `Rollout ${short}` }).waitFor();
    await seeText(status(), /^running$/);
    await seeText(
      page.getByTestId('plan'),
      /^Canary web-1 Waves 50 %, 100 % of the nodes after the canary \(cumulative\) Bake 10m after each wave's release Failure budget 1 failed node\(s\) a wave Confirmations 50 % of a wave's released nodes On halt hold: released nodes keep the change$/,
    );
    await seeCount(page.locator('table.waves tbody tr'), 3);
    const view = await rollout();
    const canaryAt = (view as unknown as { wave_list: { released_at: string }[] }).wave_list[0].released_at;
    await seeText(wave(0), new RegExp(`^canary current 1 1 outstanding .*${tokyo(canaryAt)}.*GMT\\+9`));
    expect(
      await wave(0)
        .locator('[data-seg]')
        .evaluateAll((els) => els.map((e) => `${e.getAttribute('data-seg')}=${e.textContent}`)),
    ).toEqual(['outstanding=1 outstanding']);
    await seeText(wave(1), /^wave 1 2 2 not released not yet —$/);
    await seeText(wave(2), /^wave 2 2 2 not released not yet —$/);
    expect(await page.locator('table.waves tr[aria-current="step"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-wave')))).toEqual(['0']);
    expect(await wave(1).locator('.bar').getAttribute('aria-label')).toBe('2 not released');
    await seeCount(events(), 2);
    await seeText(events().nth(0), new RegExp(`^planned .* by ${adminName} · publish ${short}$`));
    await seeText(events().nth(1), new RegExp(`^released canary .* by ${adminName} · publish ${short}$`));
    await seeText(
      page.getByTestId('rollout-progress'),
      /^canary: 0 of 1 confirmation\(s\) needed before wave 1 \(2 node\(s\)\) is released\. Following: refreshes every 3 s\.$/,
    );
    await shot('rollout');
  });

  it('keeps asking while the rollout runs without rendering anything again, and shows a change made elsewhere by itself', async () => {
    await page.evaluate(`(() => {
      window.__mutations = 0;
      new MutationObserver((m) => { window.__mutations += m.length; }).observe(document.querySelector('main'), { subtree: true, childList: true, characterData: true, attributes: true });
    })()`);
    const before = reads.length;
    await sleep(TWO_REFRESHES_MS);
    expect(reads.length - before).toBeGreaterThanOrEqual(2);
    expect(await page.evaluate('window.__mutations')).toBe(0);
    // An operator elsewhere (retectl, say) pauses it: the page shows it within a refresh, by itself.
    expect((await admin.post(`/v1/rollouts/${rolloutId}/pause`, { message: 'from the CLI' })).status).toBe(200);
    await seeText(status(), /^paused$/, 10_000);
    await seeText(events().nth(2), new RegExp(`^paused .* by ${adminName} from the CLI$`));
    expect(await page.evaluate('window.__mutations')).toBeGreaterThan(0);
    expect((await admin.post(`/v1/rollouts/${rolloutId}/resume`, {})).status).toBe(200);
    await seeText(status(), /^running$/, 10_000);
    await seeCount(events(), 4);
  });

  it("refuses a reader's action with the coordinator's own message", async () => {
    const refused = await admin.as(readerToken).post(`/v1/rollouts/${rolloutId}/pause`, {});
    expect(refused.status).toBe(403);
    await button('Pause').click();
    await seeText(
      page.getByTestId('action-error'),
      new RegExp(`^Could not pause the rollout: ${escape(refused.body.detail)} \\(forbidden\\) This needs an API token with the publisher role`),
    );
    expect((await rollout()).status).toBe('running');
    await seeText(status(), /^running$/);
  });

  it("pauses and resumes as a publisher from the page: each in the timeline under the publisher's name, with the message given", async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(publisherToken);
    // The 8-character prefix, as retectl prints it, opens the rollout too.
    await page.goto(ui(`#/rollouts/${short}`));
    await seeText(status(), /^running$/);
    await page.getByLabel('Message for the record').fill('checking the canary by hand');
    await button('Pause').click();
    await seeText(status(), /^paused$/);
    await seeCount(events(), 5);
    await seeText(events().nth(4), /^paused .* by ana checking the canary by hand$/);
    await seeText(page.getByTestId('rollout-reason'), /^checking the canary by hand$/);
    expect(await page.getByLabel('Message for the record').inputValue()).toBe('');
    await seeText(page.getByTestId('rollout-progress'), /^Paused: no wave is released until it is resumed or promoted\. Following/);
    // Pause became Resume in place: the keyboard user is still on it.
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Resume');
    expect(await button('Pause').count()).toBe(0);
    expect((await rollout()).timeline[4]).toMatchObject({ type: 'rollout_paused', actor: 'ana', reason: 'checking the canary by hand' });
    await shot('rollout-paused');
    await button('Resume').click();
    await seeText(status(), /^running$/);
    await seeCount(events(), 6);
    await seeText(events().nth(5), /^resumed .* by ana$/);
    // The pause's message is history now: the timeline has it, the header does not.
    expect(await page.getByTestId('rollout-reason').count()).toBe(0);
    expect((await rollout()).timeline[5]).toMatchObject({ type: 'rollout_resumed', actor: 'ana' });
  });

  it('promotes the next wave: it is released and current, and its publish and the rollout link to each other', async () => {
    await button('Promote').click();
    await seeText(wave(1), /^wave 1 current 2 2 outstanding .*GMT\+9/);
    await seeText(wave(0), /^canary 1 1 outstanding/);
    expect(await page.locator('table.waves tr[aria-current="step"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-wave')))).toEqual(['1']);
    await seeCount(events(), 7);
    const view = await rollout();
    expect(view.released).toBe(2);
    const released = view.timeline[6];
    expect(released).toMatchObject({ type: 'rollout_wave_released', actor: 'ana', wave: 1, publish_id: expect.any(String) });
    await seeText(events().nth(6), new RegExp(`^released wave 1 .* by ana · publish ${released.publish_id!.slice(0, 8)}$`));
    await seeText(page.getByTestId('rollout-progress'), /^wave 1: 0 of 1 confirmation\(s\) needed before wave 2 \(2 node\(s\)\) is released\./);
    await shot('rollout-promoted');

    await events()
      .nth(6)
      .getByRole('link', { name: released.publish_id!.slice(0, 8) })
      .click();
    await page.getByRole('heading', { name: `Publish ${released.publish_id!.slice(0, 8)}` }).waitFor();
    await seeText(page.getByTestId('publish-rollout'), new RegExp(`^rollout ${short} \\(released its wave 1 of 3\\)$`));
    await page.getByTestId('publish-rollout').getByRole('link').click();
    await page.getByRole('heading', { name: `Rollout ${short}` }).waitFor();
    await seeText(status(), /^running$/);
  });

  it('links no rollout from a publish outside one, even one whose message imitates a wave', async () => {
    await page.goto(ui(`#/publishes/${plainPublish}`));
    await seeText(page.locator('.progress-state'), /Converging/);
    expect(await page.getByTestId('publish-rollout').count()).toBe(0);
    // Free text naming the real rollout: the console asks the rollout, which does not list this publish.
    const forged = (await publish(`not a wave [rollout ${short}: wave 2 of 3]`, 'x', ['other-1'])).publish_id;
    const asked = page.waitForResponse((r) => new URL(r.url()).pathname === `/v1/rollouts/${short}`);
    await page.goto(ui(`#/publishes/${forged}`));
    expect((await asked).status()).toBe(200);
    await seeText(page.locator('.progress-state'), /Converging/);
    await sleep(500);
    expect(await page.getByTestId('publish-rollout').count()).toBe(0);
  });

  it('stops asking when the page is left', async () => {
    await page.goto(ui(`#/rollouts/${rolloutId}`));
    await seeText(status(), /^running$/);
    await nav('Rollouts').click();
    await seeCount(page.locator('table.rollouts tbody tr'), 1);
    await sleep(500); // a request sent just before leaving may still be counted
    const after = reads.length;
    await sleep(TWO_REFRESHES_MS);
    expect(reads.length).toBe(after);
  });

  it('aborts only once confirmed, then shows the rollout over: no actions, the abort in the timeline, and no more asking', async () => {
    await page.getByRole('link', { name: short }).click();
    await seeText(status(), /^running$/);
    await button('Abort…').click();
    const confirm = page.getByRole('group', { name: /Abort rollout/ });
    await seeText(
      confirm,
      new RegExp(
        `^Abort rollout ${short}\\? No further wave is released, and the 3 released node\\(s\\) still at the rollout's version get their previous sets back, as new versions\\.`,
      ),
    );
    // Focus moves to the confirming button in an effect after the paint that shows it.
    // Polled from here: playwright's waitForFunction compiles its predicate in the page, which the console's CSP (no eval) refuses whenever it has to poll.
    for (const until = Date.now() + 5_000; (await page.evaluate('document.activeElement?.textContent')) !== 'Abort the rollout';) {
      if (Date.now() > until) throw new Error('focus never reached the confirming Abort button');
      await new Promise((r) => setTimeout(r, 50));
    }
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await seeCount(page.getByRole('group', { name: /Abort rollout/ }), 0);
    expect((await rollout()).status).toBe('running');

    await page.getByLabel('Message for the record').fill('wrong port');
    await button('Abort…').click();
    await page.getByRole('button', { name: 'Abort the rollout' }).click();
    await seeText(status(), /^aborted$/);
    await seeText(page.getByTestId('rollout-reason'), /^aborted by an operator: wrong port$/);
    await seeText(page.getByTestId('rollout-progress'), /^This rollout is aborted; the page no longer refreshes\.$/);
    expect(await page.locator('section.actions').count()).toBe(0);
    const view = await rollout();
    const last = view.timeline[view.timeline.length - 1];
    expect(last).toMatchObject({ type: 'rollout_aborted', actor: 'ana', reason: 'aborted by an operator: wrong port', publish_id: expect.any(String) });
    await seeText(events().last(), new RegExp(`^aborted .* by ana · rollback publish ${last.publish_id!.slice(0, 8)} aborted by an operator: wrong port$`));
    await shot('rollout-aborted');
    await sleep(500);
    const after = reads.length;
    await sleep(TWO_REFRESHES_MS);
    expect(reads.length).toBe(after);

    // The rollback's publish links back to the rollout it undid.
    await events()
      .last()
      .getByRole('link', { name: last.publish_id!.slice(0, 8) })
      .click();
    await seeText(page.getByTestId('publish-rollout'), new RegExp(`^rollout ${short} \\(rolled back its released nodes\\)$`));
    await nav('Rollouts').click();
    await seeText(page.locator(`tr[data-rollout="${rolloutId}"]`), new RegExp(`^${short} aborted aborted by an operator: wrong port 2 of 3 5 `));
  });

  it('logged no JavaScript error and no policy violation, and no failed request but the refused pause', () => {
    expect(errors).toEqual([]);
    expect(failedLoads).toEqual([expect.stringContaining('403')]);
  });
});
