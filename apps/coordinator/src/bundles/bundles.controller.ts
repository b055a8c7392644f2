import { Controller, Get, Inject } from '@nestjs/common';
import { KEYS, type SigningKeyStore } from '../core/index.js';
import { Anonymous } from '../common/index.js';

/** The keys bundles are verified with. The poll route itself is PollRoute, a plain Fastify route. */
@Controller()
export class BundlesController {
  constructor(@Inject(KEYS) private readonly keys: SigningKeyStore) {}

  @Get('.well-known/jwks.json')
  @Anonymous()
  async jwks() {
    await this.keys.reloadIfChanged();
    return this.keys.jwks();
  }
}
