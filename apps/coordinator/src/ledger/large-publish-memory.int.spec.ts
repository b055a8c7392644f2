import { sha256Hex } from '#bundle';
import type { PublishRequest } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { putBlob } from '../bundles/blobs.repository.js';
import { LARGE_WORK, memoryReleases, releaseMemorySoon } from '#runtime';

describe.each(testDatabases)('a large publish and the memory-reducing collection on $name', (database) => {
  let h: LedgerHarness;
  beforeAll(async () => {
    h = await ledgerHarness(database);
  });
  afterAll(() => h?.close());

  it('no collection runs while a publish of thousands of nodes is decided and written', async () => {
    const bytes = Buffer.from('{"large":true}\n');
    await putBlob(h.db.kysely, sha256Hex(bytes), bytes);
    const nodes: PublishRequest['nodes'] = Object.fromEntries(
      Array.from({ length: LARGE_WORK + 500 }, (_, i) => [`large-${i}`, { artifacts: { 'flor.json': sha256Hex(bytes) } }]),
    );
    const before = memoryReleases();
    // The quiet time after earlier large work runs out a few milliseconds into this publish.
    releaseMemorySoon(5);
    const answer = await h.publishRequest({ message: 'large', nodes });
    expect(answer.changed).toHaveLength(LARGE_WORK + 500);
    expect(memoryReleases()).toBe(before);
  });
});
