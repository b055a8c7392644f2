import type { Duplex } from 'node:stream';
import type { ClientRequest } from 'node:http';
import { Agent, type AgentOptions, type RequestOptions } from 'node:https';
import type { X509Certificate } from 'node:crypto';
import type { Socket } from 'node:net';
import { checkServerIdentity, connect, createSecureContext, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
import { spkiPin } from './pin.js';
import type { TrustAnchors } from './trust.js';

/** What a client accepts from a server's certificate. */
export interface TrustPolicy {
  readonly anchors: TrustAnchors;
  /** A pinned key: accepted on its own when the certificate does not chain to a trusted CA. */
  readonly pin?: string;
  /** Enrolment: the key must be the pinned one, whatever CA vouches for the certificate. */
  readonly requirePin?: boolean;
}

export type TlsRefusalCode = 'pin_mismatch' | 'untrusted_certificate';

/** A server refused during the handshake, before the client wrote a byte of its request. */
export class TlsRefusedError extends Error {
  constructor(
    readonly code: TlsRefusalCode,
    message: string,
  ) {
    super(message);
    this.name = 'TlsRefusedError';
  }
}

/** What the handshake showed of the server: whether its chain and name verified, and its key's pin. */
export interface PeerFacts {
  readonly chainVerified: boolean;
  /** OpenSSL's or Node's reason when it did not (SELF_SIGNED_CERT_IN_CHAIN, ERR_TLS_CERT_ALTNAME_INVALID, …). */
  readonly chainError?: string;
  readonly pin?: string;
}

/**
 * The verdict on a server, and the words that say which check failed: undefined to go on. A pure
 * function of what the handshake showed, so every combination is tested without a server.
 */
export function judgePeer(peer: PeerFacts, policy: TrustPolicy, server: string): TlsRefusedError | undefined {
  const key = peer.pin ? `its key's sha256 pin is ${peer.pin}` : 'it showed no certificate';
  if (policy.requirePin) {
    if (peer.pin !== undefined && peer.pin === policy.pin) return undefined;
    return new TlsRefusedError(
      'pin_mismatch',
      `${server} is not the coordinator the enrolment token names: ${key}, the token pins ${policy.pin}; wrong address, or something in between; nothing was sent`,
    );
  }
  if (peer.chainVerified) return undefined;
  if (policy.pin !== undefined && peer.pin === policy.pin) return undefined;
  const chain = `its certificate is not trusted (${peer.chainError ?? 'unverified'}; trusted CAs: ${policy.anchors.source})`;
  const pinned = policy.pin !== undefined ? ` and ${key}, not the pinned ${policy.pin}` : '';
  return new TlsRefusedError('untrusted_certificate', `refused ${server}: ${chain}${pinned}; nothing was sent`);
}

export interface VerifyingAgentOptions extends AgentOptions {
  /** How long the TCP connect and TLS handshake may take together. */
  readonly handshakeTimeoutMs?: number;
  /**
   * With keepAlive: how long a connection may sit unused before this side closes it. Kept below the
   * server's idle timeout (and below a shorter one the server announces in Keep-Alive), so the client
   * is the one to close and a request is seldom written on a socket the server is closing.
   */
  readonly idleTimeoutMs?: number;
}

/** Handshakes this agent made, and how many of them resumed a session it kept. */
export interface HandshakeCounts {
  full: number;
  resumed: number;
}

/**
 * An https.Agent that hands a connection to a request only once the server passed the policy: the
 * request's first byte is written after the verdict, never before. The chain is checked by Node
 * (rejectUnauthorized is off only so the pin can stand in for a CA), the pin here.
 *
 * TLS sessions are kept per server (host, port, server name), up to `maxCachedSessions` (Node's
 * default, 100; 0 keeps none), and offered on the next connection to it: a resumed handshake skips
 * the certificate and its signature. A session is kept only from a connection that passed the
 * policy, and only by this agent, whose policy never changes; a resumed connection is judged again
 * on the certificate the session holds (the one judged when it was made), with the name check Node
 * leaves out for resumed sessions done here, so the verdict is the one a full handshake with that
 * certificate would get. A server that cannot resume (not the one that issued the ticket) makes a
 * full handshake and is judged on what it shows.
 */
export class VerifyingAgent extends Agent {
  private readonly context: SecureContext;
  private readonly handshakeTimeoutMs: number;
  private readonly idleTimeoutMs: number | undefined;
  private readonly sessionLimit: number;
  /** Per server, the last session it gave an admitted connection, and the certificate that connection was admitted on. */
  private readonly sessions = new Map<string, { readonly session: Buffer; readonly cert: X509Certificate }>();
  readonly handshakes: HandshakeCounts = { full: 0, resumed: 0 };

  constructor(
    private readonly policy: TrustPolicy,
    options: VerifyingAgentOptions = {},
  ) {
    super(options);
    this.context = createSecureContext({ ca: [...policy.anchors.ca] });
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? 30_000;
    this.idleTimeoutMs = options.idleTimeoutMs;
    this.sessionLimit = options.maxCachedSessions ?? 100;
  }

  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    const done = callback ?? (() => undefined);
    const host = options.host ?? options.hostname ?? 'localhost';
    const server = `${host}:${options.port ?? 443}`;
    const servername = (options as ConnectionOptions).servername;
    const key = `${server}:${servername ?? ''}`;
    const offered = this.sessionLimit > 0 ? this.sessions.get(key) : undefined;
    const socket: TLSSocket = connect({ ...(options as ConnectionOptions), secureContext: this.context, rejectUnauthorized: false, session: offered?.session });
    let settled = false;
    let admittedOn: X509Certificate | undefined;
    let ticket: Buffer | undefined;
    // TLS 1.3 tickets arrive after the handshake, TLS 1.2's before the verdict: kept only once admitted.
    socket.on('session', (session: Buffer) => {
      if (admittedOn) this.keepSession(key, session, admittedOn);
      else ticket = session;
    });
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      socket.setTimeout(0);
      socket.removeListener('error', onError);
      if (err) {
        // A session that led to a failed connection is not offered again.
        this.sessions.delete(key);
        socket.destroy();
        done(err, socket);
      } else {
        done(null, socket);
      }
    };
    const onError = (err: Error) => settle(err);
    socket.on('error', onError);
    socket.setTimeout(this.handshakeTimeoutMs, () => settle(new Error(`no TLS handshake with ${server} within ${this.handshakeTimeoutMs} ms`)));
    socket.once('secureConnect', () => {
      const resumed = socket.isSessionReused();
      // A resumed TLS 1.3 handshake shows no certificate (Node gives none): the server proved it holds
      // the offered session's secret, so it is the server that was admitted on the session's certificate.
      const cert = socket.getPeerX509Certificate() ?? (resumed ? offered?.cert : undefined);
      let chainVerified = socket.authorized;
      let chainError = socket.authorizationError === null ? undefined : String(socket.authorizationError);
      if (resumed && chainVerified) {
        // Node checks the name only on a full handshake (its chain verdict is the session's); checked here the same way.
        const nameError = cert ? checkServerIdentity(servername ?? hostOnly(host), cert.toLegacyObject()) : new Error('no certificate in the session');
        if (nameError) {
          chainVerified = false;
          chainError = (nameError as NodeJS.ErrnoException).code ?? nameError.message;
        }
      }
      const verdict = judgePeer({ chainVerified, chainError, pin: cert ? spkiPin(cert) : undefined }, this.policy, server);
      if (!verdict && cert) {
        admittedOn = cert;
        if (resumed) this.handshakes.resumed += 1;
        else this.handshakes.full += 1;
        if (ticket) this.keepSession(key, ticket, cert);
      }
      settle(verdict ?? null);
    });
    return undefined;
  }

  private keepSession(key: string, session: Buffer, cert: X509Certificate): void {
    if (this.sessionLimit <= 0) return;
    this.sessions.delete(key);
    this.sessions.set(key, { session, cert });
    if (this.sessions.size > this.sessionLimit) this.sessions.delete(this.sessions.keys().next().value!);
  }

  /** A connection back in the pool: closed by this side after idleTimeoutMs unused (or sooner, as the server's Keep-Alive says). */
  override keepSocketAlive(socket: Duplex): void {
    // Node's returns whether the socket may be kept (false when the server's Keep-Alive says timeout=0 or 1).
    const keep = (super.keepSocketAlive as (s: Duplex) => boolean | undefined).call(this, socket);
    const idle = this.idleTimeoutMs;
    const s = socket as Socket;
    if (keep !== false && idle !== undefined && (!s.timeout || s.timeout > idle)) s.setTimeout(idle);
    return keep as unknown as void;
  }

  /** A pooled connection taken for a request: no idle deadline while it carries one (a watch is held for minutes). */
  override reuseSocket(socket: Duplex, request: ClientRequest): void {
    super.reuseSocket(socket, request);
    if (this.idleTimeoutMs !== undefined) (socket as Socket).setTimeout(0);
  }
}

/** The host name or address a certificate must name: an IPv6 literal without its brackets. */
function hostOnly(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
