import { Command } from '@nestjs/cqrs';

/** An operator revokes every live credential of a node; answers how many. */
export class RevokeCredentialCommand extends Command<number> {
  constructor(
    readonly node: string,
    readonly actor: string,
  ) {
    super();
  }
}
