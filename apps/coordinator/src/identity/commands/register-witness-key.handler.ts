import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { DB, type Db } from '../../db/index.js';
import { DomainError } from '../../common/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { readWitnessKey, writeWitnessKey } from '../witness-keys.repository.js';
import { RegisterWitnessKeyCommand, type RegisteredWitnessKey } from './register-witness-key.command.js';

@CommandHandler(RegisterWitnessKeyCommand)
export class RegisterWitnessKeyHandler implements ICommandHandler<RegisterWitnessKeyCommand, RegisteredWitnessKey> {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly ledger: LedgerWriter,
  ) {}

  async execute({ node, credentialId, publicKey }: RegisterWitnessKeyCommand): Promise<RegisteredWitnessKey> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const held = await readWitnessKey(trx, node);
      if (held && held.credential_id === credentialId) {
        // A repeat (the agent did not see the answer) is answered as it was; another key is refused: a
        // stolen credential may not swap the witness key the node registered.
        if (held.public_key === publicKey)
          return { node, public_key: publicKey, registered_at: new Date(held.registered_at).toISOString(), position: Number(held.position) };
        throw new DomainError('witness_key_registered', `node ${node} registered another witness key with this credential; enrol again to register a new one`, {
          node,
        });
      }
      const now = new Date();
      const position = await this.ledger.recordIdentity(
        trx,
        node,
        'node_witness_key_registered',
        { node, public_key: publicKey, credential_id: credentialId },
        `node:${node}`,
      );
      await writeWitnessKey(trx, { node, public_key: publicKey, credential_id: credentialId, registered_at: now, position });
      return { node, public_key: publicKey, registered_at: now.toISOString(), position };
    });
  }
}
