/** Which key signs: trust versions, key changes, checkpoints and witnesses; it answers the ledger's checkpoint signer. */
export { changeKeys } from './key-change.js';
export { resignHeads } from './resign-heads.js';
export { checkpointSigner, signingTrust, type TrustKeys } from './signing-trust.js';
export { TrustModule } from './trust.module.js';
export { readTrustHead } from './trust.repository.js';
