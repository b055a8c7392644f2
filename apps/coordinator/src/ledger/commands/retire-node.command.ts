import { Command } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';

export class RetireNodeCommand extends Command<PublishResponse> {
  constructor(
    readonly node: string,
    readonly message: string,
    readonly actor: string,
    readonly expectedPosition?: number,
  ) {
    super();
  }
}
