/** Who may do what: API tokens, enrolment and node credentials, and the authentication behind the guard. */
export { countApiTokens, expiryOf, issueApiToken } from './api-tokens.js';
export { AuthService, refusedNodeCredential } from './auth.service.js';
export { failedLines } from './briefing.js';
export { scopedFilter, scopeView, type ScopeView } from './scoped-filter.js';
export { revokeLiveCredentials } from './credentials.repository.js';
export { firstAdminTokenLines, writeFirstAdminToken, type WrittenToken } from './first-admin-token.js';
export { IdentityModule } from './identity.module.js';
export { bearerOf, type ParsedSecret, parseSecret, secretMatches } from './secrets.js';
export { recordedLabelBuckets } from './labels-memo.js';
