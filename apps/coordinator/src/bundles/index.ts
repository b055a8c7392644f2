/** Signed bundles and their blobs: the poll route, its memory and the blob store. */
export { readBlobs, readLedgerBlobs } from './blobs.repository.js';
export { BundlesModule } from './bundles.module.js';
export { PollRoute } from './poll-route.js';
