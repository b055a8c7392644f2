import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { ControlRequest, ControlResponse } from '#contracts';
import { socketIsLive } from '#vertex-control';
import { AgentError } from '../errors.js';

const MAX_LINE = 64 * 1024;

function readLine(socket: Socket, onLine: (line: string) => void, onTooLong: () => void): void {
  let buf = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buf += chunk;
    const nl = buf.indexOf('\n');
    if (nl >= 0) {
      socket.removeAllListeners('data');
      onLine(buf.slice(0, nl));
    } else if (buf.length > MAX_LINE) {
      socket.removeAllListeners('data');
      onTooLong();
    }
  });
}


/**
 * The control socket: one JSON request line in, one JSON response line out. Mode 0600 from the start
 * (umask around listen), so only the agent's user can trigger syncs or read status.
 */
export async function serveControlSocket(path: string, handle: (req: ControlRequest) => Promise<ControlResponse>): Promise<Server> {
  if (existsSync(path)) {
    if (await socketIsLive(path)) throw new AgentError('bad_config', `another agent is running on ${path}`);
    unlinkSync(path);
  }
  const server = createServer((socket) => {
    socket.on('error', () => {});
    const answer = (res: ControlResponse) => socket.end(`${JSON.stringify(res)}\n`);
    readLine(
      socket,
      (line) => {
        let req: ControlRequest;
        try {
          const parsed = ControlRequest.safeParse(JSON.parse(line));
          if (!parsed.success) throw new Error(parsed.error.issues.map((i) => i.message).join('; '));
          req = parsed.data;
        } catch (err) {
          answer({ ok: false, error: `bad request: ${(err as Error).message}` });
          return;
        }
        handle(req).then(answer, (err: unknown) => answer({ ok: false, error: err instanceof Error ? err.message : String(err) }));
      },
      () => answer({ ok: false, error: 'request line too long' }),
    );
  });
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  chmodSync(path, 0o600);
  return server;
}

/** The client side, used by `flor agent sync` and `flor agent status`. */
export function callControlSocket(path: string, req: ControlRequest, timeoutMs: number): Promise<ControlResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new AgentError('timeout', `the agent did not answer on ${path} within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const why = err.code === 'ENOENT' || err.code === 'ECONNREFUSED' ? 'is the daemon running? (flor agent run)' : err.message;
      reject(new AgentError('not_running', `cannot reach the agent on ${path}: ${why}`, { cause: err }));
    });
    socket.once('connect', () => socket.write(`${JSON.stringify(req)}\n`));
    let answered = false;
    socket.once('close', () => {
      clearTimeout(timer);
      if (!answered) reject(new AgentError('bad_response', `the agent closed ${path} without answering`));
    });
    readLine(
      socket,
      (line) => {
        answered = true;
        clearTimeout(timer);
        socket.destroy();
        try {
          resolve(ControlResponse.parse(JSON.parse(line)));
        } catch (err) {
          reject(new AgentError('bad_response', `the agent answered something unreadable: ${(err as Error).message}`));
        }
      },
      () => {
        answered = true;
        clearTimeout(timer);
        socket.destroy();
        reject(new AgentError('bad_response', 'the agent answered an over-long line'));
      },
    );
  });
}
