import type { Readable } from 'node:stream';
import { sha256Hex } from '#bundle';
import { SHA256_PATTERN } from '#contracts';
import { DomainError } from '../common/index.js';
import { TarError, TarReader, type TarHeader } from './tar-reader.js';

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
export function entryRefusal(header: TarHeader, index: number, blobBytes: number): DomainError | null {
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
 * Reads a tar archive of blobs as it arrives: each entry's digest is checked as soon as its bytes have
 * come, and the first entry that fails (a wrong digest, a name that is not one, something that is not
 * tar, an archive cut short or over the limit) refuses the whole upload. Nothing is returned, so
 * nothing is stored, from a refused upload. Entries repeating a digest are read once.
 *
 * `stop` is called on a refusal, so the caller can stop receiving the rest of the body.
 */
export function readBlobArchive(body: Readable, limits: ArchiveLimits, stop: () => void): Promise<ArchiveBlob[]> {
  const blobs = new Map<string, Buffer>();
  const tar = new TarReader(
    {
      header(header, index) {
        const bad = entryRefusal(header, index, limits.blobBytes);
        if (bad) throw bad;
      },
      content(header, content, index) {
        const actual = sha256Hex(content);
        if (actual !== header.name) {
          throw new DomainError('digest_mismatch', `archive entry ${index + 1} is named ${header.name} but its content hashes to ${actual}`, {
            entry: index + 1,
            expected: header.name,
            actual,
          });
        }
        // The chunk's own bytes, not a copy: the archive is held until its blobs are stored either way.
        if (!blobs.has(actual)) blobs.set(actual, content);
      },
    },
    limits.blobBytes,
  );
  return new Promise((resolve, reject) => {
    let received = 0;
    let settled = false;
    const finish = (err: unknown): void => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('close', onClose);
      if (err === undefined) {
        resolve([...blobs].map(([sha256, content]) => ({ sha256, content })));
        return;
      }
      stop();
      reject(err instanceof TarError ? archiveError(err) : err);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limits.archiveBytes) return finish(new DomainError('body_too_large', `blob archives are limited to ${limits.archiveBytes} bytes`));
      try {
        tar.push(chunk);
      } catch (err) {
        finish(err);
      }
    };
    const onEnd = (): void => {
      try {
        tar.end();
        if (tar.entries === 0 && received === 0) throw new DomainError('invalid_archive', 'the request body is empty: expected a tar archive of blobs');
        finish(undefined);
      } catch (err) {
        finish(err);
      }
    };
    // A connection that closes before the body ends: the archive was cut short.
    const onClose = (): void => finish(tar.cutShort());
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('close', onClose);
    body.once('error', (err) => finish(err));
  });
}

/** The tar reader's refusal, naming where it happened. */
function archiveError(err: TarError): DomainError {
  const what = err.kind === 'cut_short' ? err.message : `the body is not a tar archive (${err.message})`;
  return new DomainError('invalid_archive', `${what}, at entry ${err.entries + 1}`, { entry: err.entries + 1 }, { cause: err });
}
