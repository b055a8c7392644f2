import { randomBytes } from 'node:crypto';
import { statSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { CertificateError, loadCertificatePair, type CertificatePair } from './certificate.js';

/** Files renamed into place (an ACME client's way) come as a burst of events: look once it is over. */
const SETTLE_MS = 200;
/** fs.watch misses changes on some file systems (NFS, some bind mounts); a stat now and then does not. */
const STAT_INTERVAL_MS = 30_000;

/** What a file is now, cheaply: a replaced or rewritten file changes at least one of these. */
const signatureOf = (path: string): string => {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return 'missing';
  }
};

/**
 * The certificate the coordinator serves, replaced without a restart when its files change on disk:
 * a new pair is swapped in for new connections (open ones keep the one they started with) only when
 * both files parse and belong together; anything else is logged and the served pair kept.
 */
export class ServedCertificate {
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  /** The files' signature last looked at, whether it loaded or not: each change is judged once. */
  private seen: string;
  private server: Server | undefined;
  /** Bumped with every certificate swapped in; each connection keeps the one it was made under. */
  private generation = 0;
  private readonly connections = new Map<TLSSocket, number>();
  /** The answer a connection is giving now, if any. */
  private readonly answering = new WeakMap<TLSSocket, ServerResponse>();

  private constructor(
    private pair: CertificatePair,
    private readonly certFile: string,
    private readonly keyFile: string,
    private readonly log: Logger,
    seen: string,
  ) {
    this.seen = seen;
  }

  /** Reads the pair at start: a bad one stops the start with the file and the reason. */
  static load(certFile: string, keyFile: string, log: Logger): ServedCertificate {
    // Taken before reading: a change while reading is seen as a change, not lost.
    const seen = `${signatureOf(certFile)}|${signatureOf(keyFile)}`;
    return new ServedCertificate(loadCertificatePair(certFile, keyFile), certFile, keyFile, log, seen);
  }

  get current(): CertificatePair {
    return this.pair;
  }

  /** The SPKI pin of the key served now: new enrolment tokens carry it. */
  get pin(): string {
    return this.pair.pin;
  }

  /** Starts swapping the pair into this server whenever the files change. */
  watch(server: Server): void {
    this.server = server;
    server.on('secureConnection', (socket: TLSSocket) => {
      this.connections.set(socket, this.generation);
      socket.once('close', () => this.connections.delete(socket));
    });
    // Ahead of every other listener (the poll's front door included): a request on a connection
    // made under a previous certificate is answered, and the connection closed after it.
    server.prependListener('request', (req, res: ServerResponse) => {
      const socket = req.socket as TLSSocket;
      if ((this.connections.get(socket) ?? this.generation) < this.generation) res.shouldKeepAlive = false;
      this.answering.set(socket, res);
      res.once('finish', () => {
        if (this.answering.get(socket) === res) this.answering.delete(socket);
      });
    });
    for (const dir of new Set([dirname(this.certFile), dirname(this.keyFile)])) {
      try {
        const w = watch(dir, () => this.soon());
        w.on('error', (err) =>
          this.log.warn({ err: { message: err.message }, dir }, 'tls: watching the certificate folder failed; checking it every 30 s instead'),
        );
        w.unref();
        this.watchers.push(w);
      } catch (err) {
        this.log.warn({ err: { message: (err as Error).message }, dir }, 'tls: cannot watch the certificate folder; checking it every 30 s instead');
      }
    }
    this.poller = setInterval(() => this.check(), STAT_INTERVAL_MS);
    this.poller.unref();
  }

  close(): void {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    clearTimeout(this.timer);
    clearInterval(this.poller);
  }

  private signature(): string {
    return `${signatureOf(this.certFile)}|${signatureOf(this.keyFile)}`;
  }

  private soon(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), SETTLE_MS);
    this.timer.unref();
  }

  /** Loads the files if they changed since last looked at; swaps the pair in if they are good. */
  check(): void {
    const signature = this.signature();
    if (signature === this.seen) return;
    this.seen = signature;
    let next: CertificatePair;
    try {
      next = loadCertificatePair(this.certFile, this.keyFile);
    } catch (err) {
      if (!(err instanceof CertificateError)) throw err;
      this.log.warn(
        { reason: err.message, serving: this.describe(this.pair) },
        'tls: the certificate files changed but cannot be served; still serving the previous certificate',
      );
      return;
    }
    if (next.cert.equals(this.pair.cert) && next.key.equals(this.pair.key)) return;
    // New session-ticket keys with every new certificate (Node makes new ones with a new context too;
    // given here so that does not depend on it): a resumed TLS 1.3 handshake shows no certificate, so
    // a client resuming a session made under the previous one would go on trusting what it verified
    // then. Sessions from before are not resumed; those clients judge what is served now.
    this.server?.setSecureContext({ cert: next.cert, key: next.key, ticketKeys: randomBytes(48) });
    const previous = this.pair;
    this.pair = next;
    this.retireConnections();
    if (next.pin === previous.pin) {
      this.log.info(this.describe(next), 'tls: renewed certificate (same key, same pin) served to new connections');
    } else {
      // Not an error, but an operator must know: nodes that trust the coordinator by its pin alone refuse the new key.
      this.log.warn(
        { ...this.describe(next), previous_pin: previous.pin },
        'tls: certificate with a new key served to new connections; new enrolment tokens carry its pin; nodes that trust the coordinator only by the old pin refuse it until they trust its CA (tls.ca_file) or enrol again',
      );
    }
  }

  /**
   * Connections made under the previous certificate end: an idle one now, one answering after its
   * answer (a held watch when it is answered). A client judged the certificate when it connected, and
   * a kept-alive connection is not judged again: closed, its next request comes on a new connection
   * and the client judges the certificate served now (a node pinned to the old key refuses a new one,
   * as it would have on its next request when it kept no connection).
   */
  private retireConnections(): void {
    this.generation += 1;
    for (const [socket, made] of this.connections) {
      if (made >= this.generation) continue;
      const res = this.answering.get(socket);
      if (!res) socket.destroy();
      else if (!res.headersSent) res.shouldKeepAlive = false;
      else res.once('finish', () => socket.end());
    }
  }

  private describe(pair: CertificatePair) {
    return { subject: pair.subject, fingerprint: pair.fingerprint, valid_to: pair.validTo, pin: pair.pin };
  }
}
