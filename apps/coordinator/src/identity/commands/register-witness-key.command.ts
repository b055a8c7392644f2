import { Command } from '@nestjs/cqrs';

export interface RegisteredWitnessKey {
  readonly node: string;
  readonly public_key: string;
  readonly registered_at: string;
  /** The ledger position of the event that recorded it. */
  readonly position: number;
}

/**
 * An enrolled agent registers the cosigning key it made (C2SP tlog-cosignature): once per
 * credential, recorded in the ledger. Enrolling again, with a new credential, registers a new one.
 */
export class RegisterWitnessKeyCommand extends Command<RegisteredWitnessKey> {
  constructor(
    readonly node: string,
    readonly credentialId: string,
    readonly publicKey: string,
  ) {
    super();
  }
}
