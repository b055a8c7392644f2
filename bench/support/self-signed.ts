// @peculiar/x509 needs the reflect polyfill loaded before it.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { onCleanup } from './cleanup.js';

x509.cryptoProvider.set(webcrypto as never);

export interface BenchCertificate {
  readonly certPem: string;
  readonly keyPem: string;
  readonly certFile: string;
  readonly keyFile: string;
}

const DAY_MS = 86_400_000;

/**
 * A self-signed P-256 server certificate for localhost and 127.0.0.1, the kind an ACME client issues
 * by default, in PEM files removed at cleanup. The benchmark's clients trust it as its own CA.
 */
export async function selfSignedCertificate(): Promise<BenchCertificate> {
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=localhost',
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 30 * DAY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'dns', value: 'localhost' },
        { type: 'ip', value: '127.0.0.1' },
      ]),
    ],
  });
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  const certPem = `${cert.toString('pem')}\n`;
  const dir = mkdtempSync(join(tmpdir(), 'florete-bench-tls-'));
  onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  writeFileSync(certFile, certPem);
  writeFileSync(keyFile, keyPem, { mode: 0o600 });
  return { certPem, keyPem, certFile, keyFile };
}
