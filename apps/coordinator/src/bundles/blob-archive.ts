import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { extract, type Header } from 'tar-stream';
import { SHA256_PATTERN } from '#contracts';
import { DomainError } from '../common/index.js';

export interface ArchiveLimits {
  /** Largest archive, counted as its bytes arrive. */
  readonly archiveBytes: number;
  /** Largest single blob in it, as the single-blob PUT allows. */
  readonly blobBytes: number;
}

export interface ArchiveBlob {
  readonly sha256: string;
  readonly content: Buffer;
}

/**
 * What an archive entry's header says about it, before a byte of its content is read: the name must
 * be the sha256 of its content (lowercase hex), a plain file, no larger than a blob may be. Returns a
 * refusal, or null when the entry may be read.
 */
export function entryRefusal(header: Pick<Header, 'name' | 'type' | 'size'>, index: number, blobBytes: number): DomainError | null {
  const where = `archive entry ${index + 1}`;
  if (header.type !== 'file')
    return new DomainError('invalid_archive', `${where} is a ${header.type}, not a file: the archive holds only blobs`, { entry: index + 1 });
  if (!SHA256_PATTERN.test(header.name))
    return new DomainError(
      'invalid_archive',
      `${where} is named ${JSON.stringify(header.name.slice(0, 100))}: each entry is named by the sha256 of its content, 64 lowercase hex digits`,
      { entry: index + 1 },
    );
  if (header.size > blobBytes)
    return new DomainError('body_too_large', `${where} (${header.name}) is ${header.size} bytes; a blob may be at most ${blobBytes}`, { entry: index + 1 });
  return null;
}

/**
 * Reads a tar archive of blobs as it arrives: each entry's digest is checked as its bytes are read,
 * and the first entry that fails (a wrong digest, a name that is not one, something that is not tar,
 * an archive cut short or over the limit) refuses the whole upload. Nothing is returned, so nothing is
 * stored, from a refused upload. Entries repeating a digest are read once.
 *
 * `stop` is called on a refusal, so the caller can stop receiving the rest of the body.
 */
export async function readBlobArchive(body: Readable, limits: ArchiveLimits, stop: () => void): Promise<ArchiveBlob[]> {
  const tar = extract();
  const blobs = new Map<string, Buffer>();
  let received = 0;
  let refusal: Error | null = null;
  const refuse = (err: Error) => {
    if (refusal) return;
    refusal = err;
    body.unpipe(tar as never);
    stop();
    tar.destroy(err);
  };
  body.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.archiveBytes) refuse(new DomainError('body_too_large', `blob archives are limited to ${limits.archiveBytes} bytes`));
  });
  body.once('error', (err) => refuse(err));
  // A body that ends before the archive does: tar-stream reports it when it is finalised.
  body.pipe(tar as never);
  let index = 0;
  try {
    for await (const entry of tar) {
      const header = entry.header;
      const bad = entryRefusal(header, index, limits.blobBytes);
      if (bad) throw bad;
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        hash.update(chunk);
        chunks.push(chunk);
      }
      const actual = hash.digest('hex');
      if (actual !== header.name) {
        throw new DomainError('digest_mismatch', `archive entry ${index + 1} is named ${header.name} but its content hashes to ${actual}`, {
          entry: index + 1,
          expected: header.name,
          actual,
        });
      }
      if (!blobs.has(actual)) blobs.set(actual, Buffer.concat(chunks));
      index++;
    }
  } catch (err) {
    const reason = refusal ?? (err instanceof DomainError ? err : archiveError(err, index));
    refuse(reason);
    throw reason;
  }
  if (refusal) throw refusal;
  if (index === 0 && received === 0) throw new DomainError('invalid_archive', 'the request body is empty: expected a tar archive of blobs');
  return [...blobs].map(([sha256, content]) => ({ sha256, content }));
}

/** tar-stream's own errors (not tar at all, cut short) as a refusal naming where it happened. */
function archiveError(err: unknown, index: number): DomainError {
  const message = err instanceof Error ? err.message : String(err);
  const what = /unexpected end/i.test(message)
    ? 'the archive ends in the middle of an entry (the upload was cut short)'
    : `the body is not a tar archive (${message.slice(0, 200)})`;
  return new DomainError('invalid_archive', `${what}, at entry ${index + 1}`, { entry: index + 1 }, { cause: err });
}
