import { Command } from '@nestjs/cqrs';
import type { PublishRequest, PublishResponse } from '#contracts';

export class PublishTreeCommand extends Command<PublishResponse> {
  constructor(
    readonly request: PublishRequest,
    readonly actor: string,
  ) {
    super();
  }
}
