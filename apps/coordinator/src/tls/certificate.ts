import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { spkiPin } from '#tls';

/** A certificate and its key as read from disk, checked to belong together. */
export interface CertificatePair {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The SPKI pin of the leaf's key (what enrolment tokens carry). */
  readonly pin: string;
  /** sha256 of the leaf certificate, as openssl prints it: tells one renewal from the next in the logs. */
  readonly fingerprint: string;
  readonly subject: string;
  readonly validTo: string;
}

/** A pair that cannot be served; the message names the file and what is wrong with it. */
export class CertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

function read(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CertificateError(`${what} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/**
 * Reads and checks the pair: the first certificate of the file is the one served (any that follow
 * are its chain), the key must be unencrypted PEM and must be that certificate's key.
 */
export function loadCertificatePair(certFile: string, keyFile: string): CertificatePair {
  const cert = read(certFile, 'FLORETE_TLS_CERT');
  const key = read(keyFile, 'FLORETE_TLS_KEY');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new CertificateError(`FLORETE_TLS_CERT ${certFile} is not a PEM certificate: ${(err as Error).message}`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    const encrypted = /passphrase/i.test((err as Error).message);
    throw new CertificateError(
      `FLORETE_TLS_KEY ${keyFile} is not ${encrypted ? 'an unencrypted' : 'a PEM'} private key${encrypted ? ' (the coordinator cannot ask for a passphrase)' : `: ${(err as Error).message}`}`,
    );
  }
  if (!leaf.checkPrivateKey(privateKey))
    throw new CertificateError(`FLORETE_TLS_KEY ${keyFile} is not the key of the certificate in ${certFile} (${leaf.subject.replace(/\n/g, ', ')})`);
  return {
    cert,
    key,
    pin: spkiPin(leaf),
    fingerprint: leaf.fingerprint256,
    subject: leaf.subject.replace(/\n/g, ', '),
    validTo: new Date(leaf.validTo).toISOString(),
  };
}
