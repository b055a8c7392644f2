import { connect, createSecureContext, type TLSSocket } from 'node:tls';

/**
 * HTTPS load with new connections: each of `connections` loops opens a TLS connection, sends
 * `perConnection` requests on it one after the other (HTTP/1.1 keep-alive), closes it and opens the
 * next. With `resume`, each new connection offers the session ticket its loop's previous connection
 * was given (TLS session resumption, as an agent's HTTP client does when it keeps its session); without,
 * every connection is a full handshake. autocannon reconnects too, but never offers a session.
 */
export interface ReconnectOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the certificate the server presents (trusted as its own CA). */
  readonly ca: string;
  readonly connections: number;
  readonly perConnection: number;
  readonly resume: boolean;
  /** Seconds. */
  readonly duration: number;
}

export interface ReconnectResult {
  readonly seconds: number;
  readonly requests: number;
  readonly handshakes: number;
  /** Handshakes that resumed a session. */
  readonly resumed: number;
  /** Answers other than 304. */
  readonly unexpected: number;
  /** Connections that failed or closed before their answers. */
  readonly errors: number;
}

/** Reads HTTP/1.1 answers off a socket one at a time: the status of each, its body (if any) skipped. */
class Answers {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (status: number) => void; reject: (e: Error) => void } | undefined;
  private failed: Error | undefined;

  constructor(socket: TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      this.drain();
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      this.waiting?.reject(this.failed);
      this.waiting = undefined;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed before the answer')));
  }

  next(): Promise<number> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.drain();
    });
  }

  private drain(): void {
    if (!this.waiting) return;
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buffer.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.buffer.length < end + 4 + length) return;
    this.buffer = this.buffer.subarray(end + 4 + length);
    const status = Number(head.slice(9, 12));
    const { resolve } = this.waiting;
    this.waiting = undefined;
    resolve(status);
  }
}

export async function measureReconnects(opts: ReconnectOptions): Promise<ReconnectResult> {
  const url = new URL(opts.url);
  const request = Buffer.from(
    `GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\n${Object.entries(opts.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
    'latin1',
  );
  const counts = { requests: 0, handshakes: 0, resumed: 0, unexpected: 0, errors: 0 };
  // One context for every connection: given `ca` instead, each connect would parse it again.
  const secureContext = createSecureContext({ ca: opts.ca });
  const started = performance.now();
  const deadline = started + opts.duration * 1000;
  const loop = async () => {
    let session: Buffer | undefined;
    while (performance.now() < deadline) {
      const socket = connect({
        host: url.hostname,
        port: Number(url.port),
        servername: 'localhost',
        secureContext,
        ...(opts.resume && session ? { session } : {}),
      });
      socket.on('session', (s: Buffer) => (session = s));
      const answers = new Answers(socket);
      try {
        await new Promise<void>((resolve, reject) => {
          socket.once('secureConnect', resolve);
          socket.once('error', reject);
        });
        counts.handshakes++;
        if (socket.isSessionReused()) counts.resumed++;
        for (let i = 0; i < opts.perConnection && performance.now() < deadline; i++) {
          socket.write(request);
          const status = await answers.next();
          counts.requests++;
          if (status !== 304) counts.unexpected++;
        }
      } catch {
        counts.errors++;
      } finally {
        socket.destroy();
      }
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, loop));
  return { seconds: (performance.now() - started) / 1000, ...counts };
}
