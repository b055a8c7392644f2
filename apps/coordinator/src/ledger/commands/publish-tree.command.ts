import { Command } from '@nestjs/cqrs';
import type { PublishRequest, PublishResponse } from '#contracts';

export class PublishTreeCommand extends Command<PublishResponse> {
  constructor(
    readonly request: PublishRequest,
    readonly actor: string,
    /** sha256 of the request body as received over HTTP, so that its repeat is answered without deciding it. */
    readonly bodyDigest?: string,
  ) {
    super();
  }
}
