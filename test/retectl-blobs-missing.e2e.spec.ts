import { createHash, randomBytes } from 'node:crypto';
import { MAX_DIGESTS_PER_ASK } from '#contracts';
import { CoordinatorClient } from '../apps/retectl/src/client.js';
import { missingBlobs } from '../apps/retectl/src/commands/publish.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';

/**
 * A fleet of 100,000 nodes with two artifacts each names 200,000 digests: more than one
 * POST /v1/blobs/missing may ask about. retectl asks in slices and puts the answers together.
 */
describe('retectl asking which blobs are missing, past one request', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('asks in slices of the most one request may carry, and finds what is missing in every slice', async () => {
    const total = MAX_DIGESTS_PER_ASK + 20_001;
    const digests = Array.from({ length: total }, () => randomBytes(32).toString('hex')).sort();
    // Three blobs the coordinator has: one in each slice, and one this tree does not offer.
    const stored = [];
    for (const text of ['first', 'second', 'unoffered']) stored.push(await admin.putBlob(`${text}\n`));
    const sha = (text: string) => createHash('sha256').update(`${text}\n`).digest('hex');
    expect(stored).toEqual(['first', 'second', 'unoffered'].map(sha));
    const asked = [...digests];
    asked.splice(10, 0, stored[0]);
    asked.splice(MAX_DIGESTS_PER_ASK + 10, 0, stored[1]);

    // One request with all of them is refused: this is why retectl slices.
    const whole = await admin.post('/v1/blobs/missing', { digests: asked });
    expect(whole.status).toBe(422);

    const client = new CoordinatorClient({ url: coordinator.url, token: coordinator.adminToken! });
    const offered = new Set(asked);
    const missing = await missingBlobs(client, asked, (d) => offered.has(d));
    expect(missing).toHaveLength(total);
    expect(missing).toEqual(digests);
    // What the coordinator answers is filtered by what this tree offers.
    expect(await missingBlobs(client, [digests[0], digests[1]], (d) => d === digests[1], 1)).toEqual([digests[1]]);
  });
});
