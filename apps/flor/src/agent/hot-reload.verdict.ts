import type { HotReloadFallbackCode } from '#contracts';
import { VertexControlError, type VertexControlAnswer } from '#vertex-control';

export type HotReloadVerdict =
  | { readonly kind: 'applied'; readonly answer: 'swapped' | 'unchanged' }
  | { readonly kind: 'restart'; readonly code: HotReloadFallbackCode; readonly reason: string };

/**
 * What the agent makes of the vertex's answer (or of the failed call) to an `apply`: only `swapped`
 * and `unchanged` spare the restart. Everything else, including answers this agent does not know,
 * restarts: a restart is always correct, a missed one leaves the vertex on the old config.
 */
export function hotReloadVerdict(outcome: { answer: VertexControlAnswer } | { error: unknown }): HotReloadVerdict {
  if ('error' in outcome) {
    const err = outcome.error;
    if (err instanceof VertexControlError) {
      switch (err.code) {
        case 'timeout':
        case 'unreachable':
        case 'closed':
        case 'bad_answer':
          return { kind: 'restart', code: err.code, reason: err.message };
        case 'socket_in_use':
        case 'not_a_socket':
          return { kind: 'restart', code: 'internal', reason: err.message };
        default: {
          const never: never = err.code;
          return { kind: 'restart', code: 'internal', reason: `unknown vertex-control error ${String(never)}` };
        }
      }
    }
    return { kind: 'restart', code: 'internal', reason: err instanceof Error ? err.message : String(err) };
  }
  const answer = outcome.answer;
  switch (answer.result) {
    case 'swapped':
    case 'unchanged':
      return { kind: 'applied', answer: answer.result };
    case 'restart':
      return {
        kind: 'restart',
        code: 'restart_answer',
        reason: `the vertex answered restart: ${answer.reason ?? (answer.changed.join(', ') || 'no reason given')}`,
      };
    case 'error':
      return { kind: 'restart', code: 'error_answer', reason: `the vertex answered ${answer.code}: ${answer.reason}` };
    case 'status':
      return { kind: 'restart', code: 'bad_answer', reason: 'the vertex answered an apply with a status' };
    default: {
      const never: never = answer;
      return { kind: 'restart', code: 'bad_answer', reason: `unknown answer ${JSON.stringify(never)}` };
    }
  }
}
