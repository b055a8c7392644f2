import { ControlRequest, ControlResponse } from '#contracts';
import { LineSocketError, causeCode, requestLine, serveLineSocket, type LineServer } from '#runtime';
import { AgentError } from '../errors.js';

const MAX_LINE = 64 * 1024;

/** A request line as the daemon's handler gets it, or the answer that refuses it. */
function parseRequest(line: string): ControlRequest | ControlResponse {
  try {
    const parsed = ControlRequest.safeParse(JSON.parse(line));
    if (!parsed.success) return { ok: false, error: `bad request: ${parsed.error.issues.map((i) => i.message).join('; ')}` };
    return parsed.data;
  } catch (err) {
    return { ok: false, error: `bad request: ${(err as Error).message}` };
  }
}

/**
 * The control socket: one JSON request line in, one JSON response line out, then the agent hangs up.
 * Mode 0600 from the start, so only the agent's user can trigger syncs or read status.
 */
export async function serveControlSocket(path: string, handle: (req: ControlRequest) => Promise<ControlResponse>): Promise<LineServer> {
  try {
    return await serveLineSocket(path, {
      maxLine: MAX_LINE,
      oneShot: true,
      onLine: async (line): Promise<ControlResponse> => {
        const req = parseRequest(line);
        if ('ok' in req) return req;
        try {
          return await handle(req);
        } catch (err) {
          return { ok: false, error: err instanceof Error ? err.message : String(err) };
        }
      },
      onTooLong: (): ControlResponse => ({ ok: false, error: 'request line too long' }),
    });
  } catch (err) {
    if (!(err instanceof LineSocketError)) throw err;
    const why = err.code === 'socket_in_use' ? `another agent is running on ${path}` : err.message;
    throw new AgentError('bad_config', why, { cause: err });
  }
}

/** The client side, used by `flor agent sync` and `flor agent status`. */
export async function callControlSocket(path: string, req: ControlRequest, timeoutMs: number): Promise<ControlResponse> {
  let line: string;
  try {
    line = await requestLine(path, req, { timeoutMs, maxLine: MAX_LINE });
  } catch (err) {
    if (!(err instanceof LineSocketError)) throw err;
    switch (err.code) {
      case 'timeout':
        throw new AgentError('timeout', `the agent did not answer on ${path} within ${timeoutMs / 1000} s`);
      case 'unreachable': {
        const code = causeCode(err);
        const why = code === 'ENOENT' || code === 'ECONNREFUSED' ? 'is the daemon running? (flor agent run)' : (err.cause as Error).message;
        throw new AgentError('not_running', `cannot reach the agent on ${path}: ${why}`, { cause: err.cause });
      }
      case 'too_long':
        throw new AgentError('bad_response', 'the agent answered an over-long line');
      default:
        throw new AgentError('bad_response', `the agent closed ${path} without answering`, { cause: err });
    }
  }
  try {
    return ControlResponse.parse(JSON.parse(line));
  } catch (err) {
    throw new AgentError('bad_response', `the agent answered something unreadable: ${(err as Error).message}`);
  }
}
