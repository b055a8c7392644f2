import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { MAX_DIGESTS_PER_ASK } from '#contracts';
import { CoordinatorClient } from '../apps/retectl/src/client.js';
import { ARCHIVE_BLOBS, BLOB_REQUESTS_IN_FLIGHT, missingBlobs, uploadBlobs } from '../apps/retectl/src/commands/publish.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';

/**
 * A fleet of 100,000 nodes with two artifacts each names 200,000 digests: more than one
 * POST /v1/blobs/missing may ask about. retectl asks in slices and puts the answers together.
 */
describe('retectl asking which blobs are missing and sending them, past one request', () => {
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

  it("sends a large tree's blobs in archives, two in flight, and one PUT each where the coordinator has no archive route", async () => {
    const blobsOf = (n: number, tag: string) =>
      new Map(
        Array.from({ length: n }, (_, i) => {
          const content = Buffer.from(`${tag} ${i} ${randomBytes(8).toString('hex')}\n`);
          return [createHash('sha256').update(content).digest('hex'), content] as const;
        }),
      );
    const client = (url: string) => new CoordinatorClient({ url, token: coordinator.adminToken! });

    // Through a relay that counts the archive requests open at once.
    const relay = await startRelay(coordinator.url, false);
    try {
      const blobs = blobsOf(2 * ARCHIVE_BLOBS + 5, 'archived');
      const digests = [...blobs.keys()];
      let ticks = 0;
      await uploadBlobs(client(relay.url), digests, blobs, { tick: () => ticks++ });
      expect(relay.archives).toBe(3);
      expect(relay.mostArchivesOpen).toBe(BLOB_REQUESTS_IN_FLIGHT);
      expect(ticks).toBe(blobs.size);
      expect(await missingBlobs(client(coordinator.url), digests, () => true)).toEqual([]);
    } finally {
      await relay.close();
    }

    // A coordinator that answers the archive route 404, as one from before it did.
    const old = await startRelay(coordinator.url, true);
    try {
      const blobs = blobsOf(25, 'one by one');
      const digests = [...blobs.keys()];
      let ticks = 0;
      await uploadBlobs(client(old.url), digests, blobs, { tick: () => ticks++ });
      expect(old.archives).toBeGreaterThanOrEqual(1);
      expect(old.puts).toBe(blobs.size);
      // The refused archive's entries went out before the 404: the bar counts each blob once, not twice.
      expect(ticks).toBe(blobs.size);
      expect(await missingBlobs(client(coordinator.url), digests, () => true)).toEqual([]);
    } finally {
      await old.close();
    }
  });
});

/** An HTTP relay on loopback to `target`, counting archive uploads and PUTs; with `noArchives`, it answers every archive upload 404. */
async function startRelay(target: string, noArchives: boolean) {
  const counts = { archives: 0, puts: 0, archivesOpen: 0, mostArchivesOpen: 0 };
  const server: Server = createServer((req, res) => {
    const archive = req.method === 'POST' && req.url === '/v1/blobs';
    if (req.method === 'PUT') counts.puts++;
    if (archive) counts.archives++;
    if (archive && noArchives) {
      req.resume();
      req.on('end', () => res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}'));
      return;
    }
    if (archive) counts.mostArchivesOpen = Math.max(counts.mostArchivesOpen, ++counts.archivesOpen);
    const onward = request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
      answer.on('end', () => archive && counts.archivesOpen--);
    });
    req.pipe(onward);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    get archives() {
      return counts.archives;
    },
    get puts() {
      return counts.puts;
    },
    get mostArchivesOpen() {
      return counts.mostArchivesOpen;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
