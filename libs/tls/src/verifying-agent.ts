import type { Duplex } from 'node:stream';
import { Agent, type AgentOptions, type RequestOptions } from 'node:https';
import { connect, createSecureContext, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
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
}

/**
 * An https.Agent that hands a connection to a request only once the server passed the policy: the
 * request's first byte is written after the verdict, never before. The chain is checked by Node
 * (rejectUnauthorized is off only so the pin can stand in for a CA), the pin here.
 */
export class VerifyingAgent extends Agent {
  private readonly context: SecureContext;
  private readonly handshakeTimeoutMs: number;

  constructor(
    private readonly policy: TrustPolicy,
    options: VerifyingAgentOptions = {},
  ) {
    super(options);
    this.context = createSecureContext({ ca: [...policy.anchors.ca] });
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? 30_000;
  }

  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    const done = callback ?? (() => undefined);
    const server = `${options.host ?? options.hostname ?? 'localhost'}:${options.port ?? 443}`;
    const socket: TLSSocket = connect({ ...(options as ConnectionOptions), secureContext: this.context, rejectUnauthorized: false, session: undefined });
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      socket.setTimeout(0);
      socket.removeListener('error', onError);
      if (err) {
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
      const cert = socket.getPeerX509Certificate();
      const facts: PeerFacts = {
        chainVerified: socket.authorized,
        chainError: socket.authorizationError === null ? undefined : String(socket.authorizationError),
        pin: cert ? spkiPin(cert) : undefined,
      };
      settle(judgePeer(facts, this.policy, server) ?? null);
    });
    return undefined;
  }
}
