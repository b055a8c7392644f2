import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { LedgerModule } from '../ledger/index.js';
import { AuthGuard } from './auth.guard.js';
import { AuthService } from './auth.service.js';
import { EnrolNodeHandler } from './commands/enrol-node.handler.js';
import { RetireNodeHandler } from './commands/retire-node.handler.js';
import { RevokeCredentialHandler } from './commands/revoke-credential.handler.js';
import { IdentityController } from './identity.controller.js';
import { ApiTokenUseFlusher, ApiTokenUses } from './api-token-uses.js';

/** Who may do what: API tokens, enrolment and node credentials, and the guard on every route. */
@Module({
  imports: [LedgerModule],
  controllers: [IdentityController],
  providers: [EnrolNodeHandler, RevokeCredentialHandler, RetireNodeHandler, AuthService, { provide: ApiTokenUses, useFactory: () => new ApiTokenUses() }, ApiTokenUseFlusher, { provide: APP_GUARD, useClass: AuthGuard }],
  exports: [AuthService],
})
export class IdentityModule {}
