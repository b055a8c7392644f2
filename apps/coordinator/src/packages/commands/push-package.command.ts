import { Command } from '@nestjs/cqrs';
import type { PackageRow } from '../packages.repository.js';

/** What a push answers: whether it recorded something new, and the package as the repository now lists it. */
export interface PushedPackage {
  readonly created: boolean;
  readonly row: PackageRow;
}

/** A publisher pushes a .deb, uploaded under the sha256 it claims for it. */
export class PushPackageCommand extends Command<PushedPackage> {
  constructor(
    readonly sha256: string,
    readonly body: Buffer,
    readonly actor: string,
  ) {
    super();
  }
}
