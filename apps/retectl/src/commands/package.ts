import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PackageList, PackagePushResponse } from '#contracts';
import { formatTable } from '../status.js';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, resolvePublic, type ConnectionFlags } from '../config.js';
import { RetectlError, usageError } from '../errors.js';
import { note, out, outJson } from '../output.js';

/** A package upload may be large and the link slow: far longer than an ordinary request. */
const PUSH_TIMEOUT_MS = 15 * 60_000;

export interface PackagePushOptions extends ConnectionFlags {
  readonly file: string;
  readonly json?: boolean;
}

/**
 * Uploads a .deb to the mesh's repository under its sha256. The coordinator reads its name, version
 * and architecture from the package itself, refuses what is not a package it can serve, and records
 * the push in the ledger; the same file again is accepted and changes nothing.
 */
export async function push(options: PackagePushOptions): Promise<void> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(options.file);
  } catch (e) {
    throw new RetectlError('io', `cannot read ${options.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const sha = createHash('sha256').update(bytes).digest('hex');
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('PUT', `/v1/packages/${sha}`, PackagePushResponse, { raw: bytes, timeoutMs: PUSH_TIMEOUT_MS });
  if (options.json) return outJson(body);
  const p = body.package;
  const what = `${p.name} ${p.version} (${p.architecture}), ${p.size} bytes, sha256 ${p.sha256.slice(0, 12)}`;
  out(
    body.created
      ? `pushed ${what} at ledger position ${p.position}`
      : `already in the repository: ${what}, pushed by ${p.actor} at ledger position ${p.position}`,
  );
}

export interface PackageListOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** The repository's packages, in push order, with who pushed each. */
export async function list(options: PackageListOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const { body } = await client.call('GET', '/v1/packages', PackageList);
  if (options.json) return outJson(body);
  if (body.items.length === 0) return out('no packages have been pushed yet');
  out(
    formatTable(
      ['NAME', 'VERSION', 'ARCH', 'SIZE', 'PUSHED', 'BY', 'SHA256'],
      body.items.map((p) => [p.name, p.version, p.architecture, String(p.size), p.pushed_at, p.actor, p.sha256.slice(0, 12)]),
    ),
  );
}

export interface PackageKeyOptions {
  readonly coordinator?: string;
  readonly cacert?: string;
  readonly armor?: boolean;
}

/**
 * Prints the key that signs the repository: binary by default, the form apt's `signed-by=….gpg`
 * reads (`retectl package key > files/florete.gpg`), ASCII-armored with --armor for `….asc`.
 * Anyone may read it, so no token is needed.
 */
export async function key(options: PackageKeyOptions): Promise<void> {
  if (!options.armor && process.stdout.isTTY)
    throw usageError('the key is binary: redirect it to a file (retectl package key > files/florete.gpg), or print it with --armor');
  const bytes = await new CoordinatorClient(resolvePublic(options)).fetchPublic(`/repo/debian/${options.armor ? 'key.asc' : 'key.gpg'}`);
  process.stdout.write(bytes);
  if (!options.armor) note(`wrote the repository's signing key (${bytes.length} bytes, binary OpenPGP) for apt's signed-by=`);
}
