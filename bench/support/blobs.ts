import { blobArchive } from '../../apps/retectl/src/blob-tar.js';
import { archiveBatches, BLOB_REQUESTS_IN_FLIGHT } from '../../apps/retectl/src/commands/publish.js';
import { eachInFlight } from '../../apps/retectl/src/in-flight.js';
import { MAX_DIGESTS_PER_ASK } from '#contracts';
import type { HttpClient } from './http.js';

/** A tar archive of these blobs, each entry named by its sha256, packed as retectl packs it (blobArchive). */
export async function tarOf(digests: readonly string[], blobs: ReadonlyMap<string, Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of blobArchive(digests, blobs, () => {})) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The digests the coordinator lacks of these, asked as retectl asks (POST /v1/blobs/missing, in slices, BLOB_REQUESTS_IN_FLIGHT at a time). */
export async function missingBlobs(api: HttpClient, token: string, digests: readonly string[]): Promise<string[]> {
  const slices: string[][] = [];
  for (let i = 0; i < digests.length; i += MAX_DIGESTS_PER_ASK) slices.push(digests.slice(i, i + MAX_DIGESTS_PER_ASK));
  const answers = await eachInFlight(
    slices,
    BLOB_REQUESTS_IN_FLIGHT,
    async (slice) => (await api.expect(200, 'POST', '/v1/blobs/missing', { token, body: { digests: slice } })).json<{ missing: string[] }>().missing,
  );
  return answers.flat();
}

/** Sends these blobs as retectl does: tar archives cut by its archiveBatches, BLOB_REQUESTS_IN_FLIGHT at a time, each packed as it is sent. */
export async function sendArchives(api: HttpClient, token: string, digests: readonly string[], blobs: ReadonlyMap<string, Buffer>): Promise<void> {
  await eachInFlight(archiveBatches(digests, blobs), BLOB_REQUESTS_IN_FLIGHT, async (batch) =>
    api.expect(200, 'POST', '/v1/blobs', { token, body: await tarOf(batch, blobs), headers: { 'content-type': 'application/x-tar' } }),
  );
}

/** Uploads the blobs the coordinator lacks, as retectl does: the missing ones, in tar archives (sendArchives). */
export async function uploadBlobs(api: HttpClient, token: string, blobs: ReadonlyMap<string, Buffer>): Promise<void> {
  await sendArchives(api, token, await missingBlobs(api, token, [...blobs.keys()]), blobs);
}
