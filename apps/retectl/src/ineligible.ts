import { IneligibleNodesProblem } from '#contracts';
import type { BriefingFailure } from '#rete';
import { RetectlError } from './errors.js';

/** A node's failed briefing lines on one line: `clock skew acceptable (900 s …); agent version supported (…)`. */
export const failedText = (lines: readonly BriefingFailure[]): string =>
  lines.map((l) => `${l.check} (${l.detail})`).join('; ') || 'its enrolment briefing failed';

/** `! alpha is ineligible: <failed lines>`: how plan and publish name an ineligible node. */
export const ineligibleLine = (node: string, lines: readonly BriefingFailure[]): string => `! ${node} is ineligible: ${failedText(lines)}`;

/**
 * The coordinator's ineligible_nodes refusal in the CLI's words: each node with its failed lines, and
 * the flag that accepts them. Any other error is returned as it was.
 */
export function explainIneligible(e: unknown, what: string, accept: (nodes: readonly string[]) => string): unknown {
  if (!(e instanceof RetectlError)) return e;
  const parsed = IneligibleNodesProblem.safeParse(e.problem);
  if (!parsed.success) return e;
  const { nodes, nodes_count } = parsed.data;
  const names = nodes.map((n) => n.node);
  const more = nodes_count !== undefined && nodes_count > nodes.length ? `; and ${nodes_count - nodes.length} more` : '';
  const them = names.length === 1 && more === '' ? 'it' : 'them';
  return new RetectlError(
    'rejected',
    `the coordinator refused the ${what}: ${nodes.map((n) => `${n.node} is ineligible: ${failedText(n.failed_briefing)}`).join('; ')}${more}. Nothing was published. Enrol ${them} again with a briefing that passes, or ${accept(names)} to accept ${them}`,
    { cause: e, problem: e.problem },
  );
}
