import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { LedgerModule, NODE_SCOPE } from '../ledger/index.js';
import { AuthGuard } from './auth.guard.js';
import { AuthService } from './auth.service.js';
import { EnrolNodeHandler } from './commands/enrol-node.handler.js';
import { RegisterWitnessKeyHandler } from './commands/register-witness-key.handler.js';
import { RetireNodeHandler } from './commands/retire-node.handler.js';
import { IssueEnrolmentTokenHandler } from './commands/issue-enrolment-token.handler.js';
import { RevokeCredentialHandler } from './commands/revoke-credential.handler.js';
import { IdentityController } from './identity.controller.js';
import { ApiTokenUseFlusher, ApiTokenUses } from './api-token-uses.js';
import { scopeGuard } from './scope-guard.js';

/**
 * Who may do what: API tokens, enrolment and node credentials, and the guard on every route. Global:
 * the ledger below asks it, through the NODE_SCOPE port, which nodes a scoped token may change.
 */
@Global()
@Module({
  imports: [LedgerModule],
  controllers: [IdentityController],
  providers: [
    EnrolNodeHandler,
    RegisterWitnessKeyHandler,
    IssueEnrolmentTokenHandler,
    RevokeCredentialHandler,
    RetireNodeHandler,
    AuthService,
    { provide: ApiTokenUses, useFactory: () => new ApiTokenUses() },
    ApiTokenUseFlusher,
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: NODE_SCOPE, useValue: { guard: scopeGuard } },
  ],
  exports: [AuthService, NODE_SCOPE],
})
export class IdentityModule {}
