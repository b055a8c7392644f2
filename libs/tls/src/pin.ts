import { createHash, X509Certificate } from 'node:crypto';

/**
 * The SPKI pin of a certificate: the sha256 of its DER SubjectPublicKeyInfo, base64url without
 * padding (43 characters), as enrolment tokens carry it. It names the key, not the certificate, so a
 * certificate renewed with the same key keeps its pin.
 */
export function spkiPin(cert: X509Certificate | string | Buffer): string {
  const x509 = cert instanceof X509Certificate ? cert : new X509Certificate(cert);
  return createHash('sha256')
    .update(x509.publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64url');
}
