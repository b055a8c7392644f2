import { blobArchive } from '../../apps/retectl/src/blob-tar.js';
import { MAX_DIGESTS_PER_ASK } from '#contracts';
import type { HttpClient } from './http.js';

/** Blobs per archive request, as retectl sends them. */
export const ARCHIVE_BLOBS = 20_000;

/** A tar archive of these blobs, each entry named by its sha256, packed as retectl packs it (blobArchive). */
export async function tarOf(digests: readonly string[], blobs: ReadonlyMap<string, Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of blobArchive(digests, blobs, () => {})) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The digests the coordinator lacks of these, asked as retectl asks (POST /v1/blobs/missing, in slices). */
export async function missingBlobs(api: HttpClient, token: string, digests: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (let i = 0; i < digests.length; i += MAX_DIGESTS_PER_ASK) {
    const answer = await api.expect(200, 'POST', '/v1/blobs/missing', { token, body: { digests: digests.slice(i, i + MAX_DIGESTS_PER_ASK) } });
    missing.push(...answer.json<{ missing: string[] }>().missing);
  }
  return missing;
}

/** Uploads the blobs the coordinator lacks, as retectl does: the missing ones, in tar archives of ARCHIVE_BLOBS. */
export async function uploadBlobs(api: HttpClient, token: string, blobs: ReadonlyMap<string, Buffer>): Promise<void> {
  const missing = await missingBlobs(api, token, [...blobs.keys()]);
  for (let i = 0; i < missing.length; i += ARCHIVE_BLOBS)
    await api.expect(200, 'POST', '/v1/blobs', {
      token,
      body: await tarOf(missing.slice(i, i + ARCHIVE_BLOBS), blobs),
      headers: { 'content-type': 'application/x-tar' },
    });
}
