import { Command } from '@nestjs/cqrs';

/** What an enrolment token answers its issuer with: the token once (its secret is kept only as a hash), its node and its expiry. */
export interface IssuedEnrolmentToken {
  readonly token: string;
  readonly node: string;
  readonly expires_at: string;
}

/** An admin issues a single-use enrolment token for a node, valid `ttlSeconds`. */
export class IssueEnrolmentTokenCommand extends Command<IssuedEnrolmentToken> {
  constructor(
    readonly node: string,
    readonly ttlSeconds: number,
    readonly actor: string,
  ) {
    super();
  }
}
