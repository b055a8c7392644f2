import { existsSync, readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { rootCertificates } from 'node:tls';

/** Where the CA certificates a client trusts come from, for its messages. */
export interface TrustAnchors {
  /** PEM certificates. */
  readonly ca: readonly string[];
  /** "the CA file /etc/florete/ca.pem" or "the system store". */
  readonly source: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The operating system's CA bundle, where Debian, Ubuntu, Fedora and RHEL keep it. */
export const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

/** Thrown for a CA file that cannot be read or holds no certificate; the message names the file. */
export class CaFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaFileError';
  }
}

/** Every certificate of a PEM bundle, each parsed so a damaged one is named now, not at the first handshake. */
export function readCaFile(path: string, from: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CaFileError(`${from} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const certs = text.match(PEM_CERT) ?? [];
  if (certs.length === 0) throw new CaFileError(`${from} ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  certs.forEach((pem, i) => {
    try {
      new X509Certificate(pem);
    } catch (err) {
      throw new CaFileError(`${from} ${path}: certificate ${i + 1} does not parse: ${(err as Error).message}`);
    }
  });
  return certs;
}

let system: TrustAnchors | undefined;

/**
 * The default trust: Node's own copy of Mozilla's CA list, plus the operating system's bundle (where
 * `update-ca-certificates` puts a private CA), plus NODE_EXTRA_CA_CERTS. Node alone would ignore the
 * system's bundle, and would drop NODE_EXTRA_CA_CERTS as soon as a client gives its own list.
 */
export function systemTrust(env: NodeJS.ProcessEnv = process.env): TrustAnchors {
  if (system) return system;
  const files = [SYSTEM_BUNDLES.find((p) => existsSync(p)), env.NODE_EXTRA_CA_CERTS].filter((f): f is string => !!f);
  const unique = [...new Set(files)];
  const ca = [...rootCertificates, ...unique.flatMap(readPemLeniently)];
  system = { ca, source: `the system store (${["Node's CA list", ...unique].join(', ')})` };
  return system;
}

/** A system file the client does not own: what is unreadable in it is skipped, as Node does. */
function readPemLeniently(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').match(PEM_CERT) ?? [];
  } catch {
    return [];
  }
}

/** The given CA file alone (it replaces the default trust, as curl's --cacert does), else the default trust. */
export function trustAnchors(caFile: string | undefined, from: string): TrustAnchors {
  if (caFile === undefined) return systemTrust();
  return { ca: readCaFile(caFile, from), source: `the CA file ${caFile}` };
}
