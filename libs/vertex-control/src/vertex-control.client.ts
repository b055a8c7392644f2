import { LineSocketError, requestLine } from '#runtime';
import { VertexControlError } from './errors.js';
import { MAX_REQUEST_LINE, VertexControlAnswer, type VertexControlRequest } from './protocol.schema.js';

/**
 * Sends one request to a vertex's control socket and waits for its answer. Throws a
 * VertexControlError (`unreachable`, `timeout`, `closed`, `bad_answer`) when no valid answer comes:
 * the agent treats each of those as "restart instead".
 */
export async function callVertexControl(path: string, request: VertexControlRequest, timeoutMs: number): Promise<VertexControlAnswer> {
  let line: string;
  try {
    line = await requestLine(path, request, { timeoutMs, maxLine: MAX_REQUEST_LINE });
  } catch (err) {
    if (!(err instanceof LineSocketError)) throw err;
    const cause = err.cause ?? err;
    switch (err.code) {
      case 'timeout':
        throw new VertexControlError('timeout', `the vertex did not answer on ${path} within ${timeoutMs} ms`);
      case 'unreachable':
        throw new VertexControlError('unreachable', `cannot reach the vertex on ${path}: ${(cause as Error).message}`, { cause });
      case 'too_long':
        throw new VertexControlError('bad_answer', 'the vertex answered an over-long line');
      default:
        throw new VertexControlError('closed', `the vertex closed ${path} without answering`, { cause });
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (err) {
    throw new VertexControlError('bad_answer', `the vertex answered a line that is not JSON: ${(err as Error).message}`);
  }
  const answer = VertexControlAnswer.safeParse(json);
  if (!answer.success) throw new VertexControlError('bad_answer', `the vertex answered an unknown shape: ${answer.error.issues[0]?.message ?? ''}`);
  return answer.data;
}
