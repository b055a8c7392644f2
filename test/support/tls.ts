import 'reflect-metadata';
import { createHash, webcrypto } from 'node:crypto';
import { request, Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';
import * as x509 from '@peculiar/x509';
import { jsonOrUndefined, requestParts, type Reply, type RequestOptions } from './http.js';

x509.cryptoProvider.set(webcrypto as never);

/** Throwaway certificates for tests: a CA and the server certificates it signs, all P-256. */

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;

export type KeyPair = webcrypto.CryptoKeyPair;

export interface Issued {
  readonly certPem: string;
  readonly keyPem: string;
  readonly keys: KeyPair;
}

export const newKeys = (): Promise<KeyPair> => webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as Promise<KeyPair>;

async function keyPem(keys: KeyPair): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as never));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
}

const day = 86_400_000;

export class ThrowawayCa {
  private constructor(
    readonly cert: x509.X509Certificate,
    readonly keys: KeyPair,
  ) {}

  get certPem(): string {
    return `${this.cert.toString('pem')}\n`;
  }

  static async create(name: string): Promise<ThrowawayCa> {
    const keys = await newKeys();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: `CN=${name}`,
      keys,
      signingAlgorithm: SIGN,
      notBefore: new Date(Date.now() - day),
      notAfter: new Date(Date.now() + 30 * day),
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new ThrowawayCa(cert, keys);
  }

  /** A server certificate for localhost and 127.0.0.1, with new keys or the given ones (a renewal). */
  async issue(keys?: KeyPair, cn = 'florete coordinator'): Promise<Issued> {
    const k = keys ?? (await newKeys());
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${cn}`,
      issuer: this.cert.subject,
      publicKey: k.publicKey,
      signingKey: this.keys.privateKey,
      signingAlgorithm: SIGN,
      notBefore: new Date(Date.now() - day),
      notAfter: new Date(Date.now() + 30 * day),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert),
        await x509.SubjectKeyIdentifierExtension.create(k.publicKey),
      ],
    });
    return { certPem: `${cert.toString('pem')}\n`, keyPem: await keyPem(k), keys: k };
  }
}

export interface TlsReply extends Reply {
  /** The sha256 fingerprint of the certificate the server showed on this request's connection. */
  readonly fingerprint: string;
  readonly socket: TLSSocket;
}

/** The tests' own https client: trusts the throwaway CA given, optionally over one kept-alive connection. */
export class TlsClient {
  constructor(
    readonly baseUrl: string,
    readonly ca: string,
    readonly token?: string,
    readonly agent?: Agent,
  ) {}

  as(token: string | undefined): TlsClient {
    return new TlsClient(this.baseUrl, this.ca, token, this.agent);
  }

  request(method: string, path: string, options: RequestOptions = {}): Promise<TlsReply> {
    const { headers, body } = requestParts(this.token, options);
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.baseUrl),
        { method, headers, ca: this.ca, agent: this.agent ?? new Agent({ ca: this.ca, keepAlive: false }) },
        (res) => {
          // Read here: by the end of the answer a kept-alive socket is back in its agent.
          const socket = res.socket as TLSSocket;
          const fingerprint = socket.getPeerCertificate().fingerprint256;
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const parsed = jsonOrUndefined(text);
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
            resolve({ status: res.statusCode ?? 0, headers: h, text, body: parsed, fingerprint, socket });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  get(path: string, options?: RequestOptions): Promise<TlsReply> {
    return this.request('GET', path, options);
  }

  post(path: string, json?: unknown, options: RequestOptions = {}): Promise<TlsReply> {
    return this.request('POST', path, json === undefined ? options : { ...options, json });
  }

  /** Uploads a blob (publisher) and returns its sha256. */
  async putBlob(content: string | Uint8Array): Promise<string> {
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const sha = createHash('sha256').update(bytes).digest('hex');
    const r = await this.request('PUT', `/v1/blobs/${sha}`, { raw: bytes, headers: { 'content-type': 'application/octet-stream' } });
    if (r.status !== 201 && r.status !== 200) throw new Error(`PUT /v1/blobs/${sha} answered ${r.status}: ${r.text}`);
    return sha;
  }
}
