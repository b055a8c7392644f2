import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { readLines } from './line-reader.js';
import { socketIsLive } from './socket-liveness.js';

/**
 * Newline-delimited JSON over a unix socket: the agent's control socket (`flor agent sync|status`)
 * and a vertex's control channel (hot reload) both speak it. A request is one JSON object on one
 * line; so is its answer. This module holds the transport only: each side parses its own messages.
 */

export type LineSocketErrorCode =
  /** Another live process serves the path. */
  | 'socket_in_use'
  /** The path exists and is not a socket: never replaced. */
  | 'not_a_socket'
  /** listen() failed for another reason (no such folder, permissions). */
  | 'listen_failed'
  /** Nothing accepts connections on the path. */
  | 'unreachable'
  /** No answer line within the time given. */
  | 'timeout'
  /** The peer closed or dropped the connection without answering. */
  | 'closed'
  /** The answer line was longer than allowed. */
  | 'too_long';

export class LineSocketError extends Error {
  constructor(
    readonly code: LineSocketErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LineSocketError';
  }
}

/** The errno of the failure underneath (ENOENT, ECONNREFUSED, …), when there was one. */
export function causeCode(err: LineSocketError): string | undefined {
  return (err.cause as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Removes a socket file left behind by a process that no longer runs. Nothing there: nothing to do.
 * A live socket, or a path that is not a socket, is an error and is left as it is.
 */
export async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new LineSocketError('not_a_socket', `${path} exists and is not a socket; refusing to replace it`);
  if (await socketIsLive(path)) throw new LineSocketError('socket_in_use', `another process serves ${path}`);
  unlinkSync(path);
}

export interface LineServerOptions {
  /** The longest request line accepted; a longer one gets `onTooLong` and no more lines. */
  readonly maxLine: number;
  /** Connections served at once (the rest are refused by the kernel's backlog). */
  readonly maxConnections?: number;
  /**
   * Called for every request line of a connection, in order. Whatever it returns is written back as
   * one JSON line; `undefined` writes nothing. It may be async; a throw is the handler's bug and is
   * reported through `onError` with the connection dropped.
   */
  readonly onLine: (line: string, socket: Socket) => unknown;
  /** The answer to an over-long line; the connection is ended after it. */
  readonly onTooLong: (socket: Socket) => unknown;
  /** One request per connection (the agent's socket): after the first answer the server hangs up. */
  readonly oneShot?: boolean;
  readonly onError?: (err: Error) => void;
}

export interface LineServer {
  readonly server: Server;
  /** Stops accepting, drops open connections and removes the socket file. */
  close(): Promise<void>;
}

/**
 * Serves newline-delimited JSON on a unix socket, mode 0600 from the moment it exists (umask around
 * listen), so only the owner's user can talk to it. A socket file left by a dead process is replaced.
 */
export async function serveLineSocket(path: string, options: LineServerOptions): Promise<LineServer> {
  await clearStaleSocket(path);
  const sockets = new Set<Socket>();
  const report = options.onError ?? (() => {});
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    // Answers go out in the order their requests came in, even when a handler is async.
    let queue: Promise<unknown> = Promise.resolve();
    let done = false;
    const send = (answer: unknown, end: boolean): void => {
      if (answer !== undefined && socket.writable) socket.write(`${JSON.stringify(answer)}\n`);
      if (end) socket.end();
    };
    readLines(socket, options.maxLine, {
      onLine: (line) => {
        if (done || line.trim() === '') return;
        if (options.oneShot) done = true;
        queue = queue
          .then(() => options.onLine(line, socket))
          .then(
            (answer) => send(answer, options.oneShot === true),
            (err: unknown) => {
              report(err instanceof Error ? err : new Error(String(err)));
              socket.destroy();
            },
          );
      },
      // The rest of an over-long line cannot be told from the next request: answer and hang up.
      onTooLong: () => {
        done = true;
        queue = queue.then(() => send(options.onTooLong(socket), true));
      },
      onEnd: () => {
        queue = queue.then(() => socket.end());
      },
    });
  });
  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new LineSocketError(code === 'EADDRINUSE' ? 'socket_in_use' : 'listen_failed', `cannot listen on ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    process.umask(previous);
  }
  chmodSync(path, 0o600);
  server.on('error', (err) => report(err));
  return {
    server,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Sends one request line and resolves with the first answer line, unparsed. Rejects with a
 * LineSocketError: `unreachable` (nothing listens; the errno is its cause), `timeout`, `closed`
 * (the peer hung up first) or `too_long`.
 */
export function requestLine(path: string, request: unknown, options: { timeoutMs: number; maxLine: number }): Promise<string> {
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
      () => settle(() => reject(new LineSocketError('timeout', `no answer on ${path} within ${options.timeoutMs} ms`))),
      options.timeoutMs,
    );
    let connected = false;
    socket.once('error', (err) =>
      settle(() =>
        reject(
          connected
            ? new LineSocketError('closed', `the connection on ${path} dropped without an answer: ${err.message}`, { cause: err })
            : new LineSocketError('unreachable', `cannot connect to ${path}: ${err.message}`, { cause: err }),
        ),
      ),
    );
    socket.once('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.once('close', () => settle(() => reject(new LineSocketError('closed', `${path} closed without an answer`))));
    readLines(socket, options.maxLine, {
      onLine: (line) => settle(() => resolve(line)),
      onTooLong: () => settle(() => reject(new LineSocketError('too_long', `the answer on ${path} is longer than ${options.maxLine} bytes`))),
      onEnd: () => {},
    });
  });
}
