import { connect } from 'node:net';
import { VertexControlError } from './errors.js';
import { readLines } from './line-reader.js';
import { MAX_REQUEST_LINE, VertexControlAnswer, type VertexControlRequest } from './protocol.schema.js';

/**
 * Sends one request to a vertex's control socket and waits for its answer. Throws a
 * VertexControlError (`unreachable`, `timeout`, `closed`, `bad_answer`) when no valid answer comes:
 * the agent treats each of those as "restart instead".
 */
export function callVertexControl(path: string, request: VertexControlRequest, timeoutMs: number): Promise<VertexControlAnswer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const socket = connect(path);
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      fn();
    };
    const timer = setTimeout(
      () => settle(() => reject(new VertexControlError('timeout', `the vertex did not answer on ${path} within ${timeoutMs} ms`))),
      timeoutMs,
    );
    let connected = false;
    socket.once('error', (err) =>
      settle(() =>
        reject(
          connected
            ? new VertexControlError('closed', `the vertex dropped the connection on ${path} without answering: ${err.message}`, { cause: err })
            : new VertexControlError('unreachable', `cannot reach the vertex on ${path}: ${err.message}`, { cause: err }),
        ),
      ),
    );
    socket.once('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.once('close', () => settle(() => reject(new VertexControlError('closed', `the vertex closed ${path} without answering`))));
    readLines(socket, MAX_REQUEST_LINE, {
      onLine: (line) =>
        settle(() => {
          let json: unknown;
          try {
            json = JSON.parse(line);
          } catch (err) {
            return reject(new VertexControlError('bad_answer', `the vertex answered a line that is not JSON: ${(err as Error).message}`));
          }
          const answer = VertexControlAnswer.safeParse(json);
          if (answer.success) resolve(answer.data);
          else reject(new VertexControlError('bad_answer', `the vertex answered an unknown shape: ${answer.error.issues[0]?.message ?? ''}`));
        }),
      onTooLong: () => settle(() => reject(new VertexControlError('bad_answer', 'the vertex answered an over-long line'))),
      onEnd: () => {},
    });
  });
}
