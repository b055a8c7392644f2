import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);
/** axe-core's browser build, read once. */
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly string[];
}

/**
 * Runs axe-core in the page against WCAG 2.1 A and AA and best practice, and answers its serious
 * and critical violations (each with the selectors it found). The script is evaluated through the
 * browser's debugging protocol, so the console's Content-Security-Policy stays on and is not
 * loosened for the check.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE);
  const found = (await page.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
    .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`)) as AxeViolation[];
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
