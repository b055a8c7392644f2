import { Query } from '@nestjs/cqrs';
import type { ChainVerdict } from '../domain/hash-chain.js';

/**
 * The hash chain recomputed and then checked against the git audit mirror. The ledger asks; the
 * mirror module, which knows the audit repository, answers with the chain's verdict and its own.
 */
export class VerifyWithMirrorQuery extends Query<ChainVerdict> {}
