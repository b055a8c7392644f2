import { Command } from '@nestjs/cqrs';
import type { PublishRequest, PublishResponse } from '#contracts';
import type { AdmitChanges } from '../ledger-ports.js';

export class PublishTreeCommand extends Command<PublishResponse> {
  constructor(
    readonly request: PublishRequest,
    readonly actor: string,
    /** sha256 of the request body as received over HTTP, so that its repeat is answered without deciding it. */
    readonly bodyDigest?: string,
    /** The caller's check of what the decision changes (a scoped token's), and the labels it writes. */
    readonly admit?: AdmitChanges,
  ) {
    super();
  }
}
