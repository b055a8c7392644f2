import { Readable } from 'node:stream';

const BLOCK = 512;
const ZEROS = Buffer.alloc(2 * BLOCK);
/** Entries are sent in chunks of about this many bytes, not two or three small writes each. */
const CHUNK_BYTES = 256 * 1024;

/**
 * The ustar header of a regular file: mode 0644, owner 0, modification time 0, so the same blobs
 * always make the same archive. `name` is ASCII of at most 100 bytes (a blob's sha256 is 64) and
 * `size` below 8 GiB, the most its 11 octal digits hold.
 */
export function ustarHeader(name: string, size: number): Buffer {
  if (name.length > 100 || !/^[\x20-\x7e]+$/.test(name))
    throw new RangeError(`a tar entry name must be 1 to 100 printable ASCII characters: ${JSON.stringify(name)}`);
  if (!Number.isSafeInteger(size) || size < 0 || size >= 8 ** 11) throw new RangeError(`a tar entry of ${size} bytes does not fit a ustar header`);
  const header = Buffer.from(TEMPLATE);
  header.write(name, 0, 'ascii');
  header.write(size.toString(8).padStart(11, '0'), 124, 'ascii');
  // The checksum is the sum of the header's bytes with its own field as spaces: the template's, and
  // what the name and size add to it (the size field's 11 digits replace 11 zero digits).
  let sum = TEMPLATE_SUM;
  for (let i = 0; i < name.length; i++) sum += name.charCodeAt(i);
  for (let i = 124; i < 135; i++) sum += header[i] - 0x30;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return header;
}

/** Every field but the name, the size's digits and the checksum, which is spaces while it is summed. */
const TEMPLATE = (() => {
  const header = Buffer.alloc(BLOCK);
  header.write('0000644\0', 100, 'ascii');
  header.write('0000000\0', 108, 'ascii');
  header.write('0000000\0', 116, 'ascii');
  header.write('00000000000\0', 124, 'ascii');
  header.write('00000000000\0', 136, 'ascii');
  header.fill(0x20, 148, 156);
  header.write('0', 156, 'ascii');
  header.write('ustar\x0000', 257, 'ascii');
  return header;
})();
const TEMPLATE_SUM = TEMPLATE.reduce((a, b) => a + b, 0);

/**
 * A tar archive of these blobs as a stream, each entry named by its sha256, then the two zero blocks
 * that end an archive. `sent` is called for each entry once it is in a chunk handed to the stream.
 */
export function blobArchive(digests: readonly string[], bytes: ReadonlyMap<string, Uint8Array>, sent: () => void): Readable {
  function* chunks(): Generator<Buffer> {
    let parts: Uint8Array[] = [];
    let size = 0;
    let entries = 0;
    const flush = () => {
      const chunk = Buffer.concat(parts, size);
      parts = [];
      size = 0;
      for (; entries > 0; entries--) sent();
      return chunk;
    };
    for (const sha of digests) {
      const content = bytes.get(sha);
      if (content === undefined) throw new Error(`no bytes for blob ${sha}`);
      const pad = (BLOCK - (content.byteLength % BLOCK)) % BLOCK;
      parts.push(ustarHeader(sha, content.byteLength), content);
      if (pad > 0) parts.push(ZEROS.subarray(0, pad));
      size += BLOCK + content.byteLength + pad;
      entries++;
      if (size >= CHUNK_BYTES) yield flush();
    }
    parts.push(ZEROS);
    size += ZEROS.byteLength;
    yield flush();
  }
  return Readable.from(chunks(), { objectMode: false });
}
