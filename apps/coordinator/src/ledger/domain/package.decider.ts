import { DomainError } from '../../common/index.js';
import type { PackagePushed } from './ledger.events.js';

/** A package as read from its .deb, with the digest and size of the file. */
export type PushedPackage = PackagePushed['data'];

/** What the repository already holds for the same name, version and architecture. */
export interface StoredPackage {
  readonly sha256: string;
  readonly position: number;
}

export type PackageDecision = { readonly kind: 'record'; readonly event: PackagePushed } | { readonly kind: 'already_pushed'; readonly position: number };

/**
 * A version is pushed once: the same bytes again are already there (nothing recorded), other bytes
 * under the same name, version and architecture are refused. A node that installed 1.0 must be able
 * to trust that 1.0 is what it installed, and apt would refuse the file anyway once its digest
 * stopped matching what a node's index says.
 */
export function decidePackagePush(pushed: PushedPackage, stored: StoredPackage | undefined, revision: number): PackageDecision {
  if (stored === undefined) return { kind: 'record', event: { type: 'package_pushed', stream: `package:${pushed.name}`, revision, data: pushed } };
  if (stored.sha256 === pushed.sha256) return { kind: 'already_pushed', position: stored.position };
  const id = `${pushed.name} ${pushed.version} (${pushed.architecture})`;
  throw new DomainError(
    'package_conflict',
    `${id} is already in the repository with other content (sha256 ${stored.sha256}, pushed at ledger position ${stored.position}): a version is pushed once; build the change as a new version`,
    { name: pushed.name, version: pushed.version, architecture: pushed.architecture, sha256: stored.sha256 },
  );
}
