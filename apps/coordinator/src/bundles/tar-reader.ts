/**
 * A tar archive read as its bytes arrive, in the caller's turn: `push` takes each chunk and hands
 * the handler every header and every whole entry it completes before it returns; `end` says whether
 * the archive stopped where an entry did. No stream, no promise, no event per entry: an upload of 100,000 small blobs is 100,000
 * entries, and a streaming reader's turns of the event loop for each cost more than the entries'
 * own bytes (bench/README.md, bench:primitives).
 *
 * What it reads (POSIX.1-1988 ustar, with the extensions archivers write): a 512-byte header per
 * entry, its checksum checked; the name with its ustar prefix; the size in octal or, past 8 GiB, the
 * base-256 form; the content padded to 512 bytes. A pax extended header (`x`) gives the next entry its
 * `path` and `size`, a GNU long name (`L`) its name; a pax global header (`g`) and a GNU long link
 * name (`K`) are read and set aside. Zero blocks are skipped wherever they are (the end-of-archive
 * marker, and the padding archivers add to a whole record), so an archive may end with or without
 * them. Everything else is an entry of its own type, for the caller to accept or refuse.
 */

const BLOCK = 512;

/** An entry's header, as the caller sees it. */
export interface TarHeader {
  readonly name: string;
  /** `file`, `link`, `symlink`, `character-device`, `block-device`, `directory`, `fifo`, `contiguous-file`, or `type <c>`. */
  readonly type: string;
  readonly size: number;
}

/** Why the bytes are not a tar archive, or stop inside one; `entries` whole entries came before. */
export class TarError extends Error {
  constructor(
    message: string,
    readonly kind: 'not_tar' | 'cut_short',
    readonly entries: number,
  ) {
    super(message);
  }
}

export interface TarEntryHandler {
  /** The header of the next entry, before its content is read: throws to refuse it, which stops the read. */
  header(header: TarHeader, index: number): void;
  /** The entry's whole content: a slice of the bytes pushed (never written to by the reader). */
  content(header: TarHeader, content: Buffer, index: number): void;
}

const TYPES: Readonly<Record<string, string>> = {
  '0': 'file',
  '\0': 'file',
  '1': 'link',
  '2': 'symlink',
  '3': 'character-device',
  '4': 'block-device',
  '5': 'directory',
  '6': 'fifo',
  '7': 'contiguous-file',
};

/** Headers that describe the next entry, not entries of their own. */
const PAX = 'x';
const PAX_GLOBAL = 'g';
const GNU_LONG_NAME = 'L';
const GNU_LONG_LINK = 'K';

export class TarReader {
  /**
   * Bytes received and not yet read, with their length: gathered until the next header, or the whole
   * content and padding of the entry awaited, has come, then joined once (a large blob arriving in
   * many chunks is copied once, not once a chunk).
   */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The entry whose content is awaited, with what its content and padding take. */
  private current: { readonly header: TarHeader | null; readonly meta: string | null; readonly size: number } | null = null;
  /** What a pax or GNU long-name header says of the next entry. */
  private next: { name?: string; size?: number } = {};
  private count = 0;

  /** `metaLimit`: the largest pax or long-name header read, so that one cannot make the reader hold gigabytes. */
  constructor(
    private readonly handler: TarEntryHandler,
    private readonly metaLimit: number,
  ) {}

  /** Whole entries read so far. */
  get entries(): number {
    return this.count;
  }

  /** Reads `chunk`: every entry it completes goes to the handler before this returns. Throws what the handler throws. */
  push(chunk: Buffer): void {
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes < (this.current ? padded(this.current.size) : BLOCK)) return;
    const buf = this.held.length === 1 ? this.held[0] : Buffer.concat(this.held, this.heldBytes);
    let at = 0;
    for (;;) {
      if (this.current) {
        const { header, meta, size } = this.current;
        if (buf.length - at < padded(size)) break;
        this.current = null;
        const content = buf.subarray(at, at + size);
        at += padded(size);
        if (header) {
          this.handler.content(header, content, this.count);
          this.count++;
        } else this.readMeta(meta as string, content);
        continue;
      }
      if (buf.length - at < BLOCK) break;
      const block = buf.subarray(at, at + BLOCK);
      at += BLOCK;
      if (isZero(block)) continue;
      this.readHeader(block);
    }
    // Kept as a copy when small, so that a chunk's buffer is not held for its last few bytes.
    const rest = buf.subarray(at);
    this.held = rest.length === 0 ? [] : [rest.length < BLOCK ? Buffer.from(rest) : rest];
    this.heldBytes = rest.length;
  }

  /** The archive's bytes have all come: throws when they stop inside a header or an entry. */
  end(): void {
    if (this.current || this.heldBytes > 0) throw this.cutShort();
  }

  /** The refusal of an archive whose bytes stopped coming here: at its end, or with its connection. */
  cutShort(): TarError {
    return new TarError('the archive ends in the middle of an entry (the upload was cut short)', 'cut_short', this.count);
  }

  private readHeader(block: Buffer): void {
    // Not a number at all counts as a wrong checksum: text that is not tar fails here.
    if (checksumOf(block) !== octalOrNaN(block, 148, 8)) {
      throw new TarError('a header fails its checksum', 'not_tar', this.count);
    }
    const magic = block.toString('latin1', 257, 263);
    const ustar = magic === 'ustar\0';
    if (!ustar && magic !== 'ustar ') throw new TarError(`a header is not ustar (its magic is ${JSON.stringify(magic)})`, 'not_tar', this.count);
    const flag = String.fromCharCode(block[156]);
    const declared = sizeOf(block, this.count);
    if (flag === PAX || flag === PAX_GLOBAL || flag === GNU_LONG_NAME || flag === GNU_LONG_LINK) {
      if (declared > this.metaLimit) {
        throw new TarError(
          `a ${flag === GNU_LONG_NAME || flag === GNU_LONG_LINK ? 'long name' : 'pax'} header of ${declared} bytes is larger than any blob`,
          'not_tar',
          this.count,
        );
      }
      this.current = { header: null, meta: flag, size: declared };
      return;
    }
    let name = this.next.name ?? textOf(block, 0, 100);
    if (this.next.name === undefined && ustar && block[345] !== 0) name = `${textOf(block, 345, 155)}/${name}`;
    const size = this.next.size ?? declared;
    this.next = {};
    const header: TarHeader = { name, type: TYPES[flag] ?? `type ${JSON.stringify(flag)}`, size };
    this.handler.header(header, this.count);
    this.current = { header, meta: null, size };
  }

  private readMeta(flag: string, content: Buffer): void {
    if (flag === GNU_LONG_NAME) this.next.name = textOf(content, 0, content.length);
    else if (flag === PAX) {
      const records = paxRecords(content, this.count);
      const path = records.get('path');
      const size = records.get('size');
      if (path !== undefined) this.next.name = path;
      if (size !== undefined) {
        if (!/^[0-9]{1,15}$/.test(size)) throw new TarError(`a pax header gives the size ${JSON.stringify(size.slice(0, 40))}`, 'not_tar', this.count);
        this.next.size = Number(size);
      }
    }
  }
}

/** An entry's content and the padding after it, to a whole number of blocks. */
function padded(size: number): number {
  return size + ((BLOCK - (size % BLOCK)) % BLOCK);
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i += 4) if (block.readUInt32LE(i) !== 0) return false;
  return true;
}

/** The header's checksum as ustar defines it: its bytes summed unsigned, the checksum's own eight as spaces. */
function checksumOf(block: Buffer): number {
  let sum = 8 * 0x20;
  for (let i = 0; i < 148; i++) sum += block[i];
  for (let i = 156; i < BLOCK; i++) sum += block[i];
  return sum;
}

/** An octal field: optional leading spaces, digits, then a NUL or space (or the field's end); NaN when it is not. */
function octalOrNaN(block: Buffer, start: number, length: number): number {
  let i = start;
  const end = start + length;
  while (i < end && block[i] === 0x20) i++;
  let value = 0;
  let digits = 0;
  for (; i < end && block[i] >= 0x30 && block[i] <= 0x37; i++, digits++) value = value * 8 + (block[i] - 0x30);
  return digits === 0 || (i < end && block[i] !== 0 && block[i] !== 0x20) ? NaN : value;
}

/** The size field: octal, or base-256 (its first byte's high bit set) as GNU tar writes sizes past 8 GiB. */
function sizeOf(block: Buffer, entries: number): number {
  if ((block[124] & 0x80) === 0) {
    const size = octalOrNaN(block, 124, 12);
    if (Number.isNaN(size)) throw new TarError(`a header's size field holds ${JSON.stringify(block.toString('latin1', 124, 136))}`, 'not_tar', entries);
    return size;
  }
  let value = block[124] & 0x7f;
  for (let i = 125; i < 136; i++) value = value * 256 + block[i];
  if (!Number.isSafeInteger(value)) throw new TarError('a header gives a size past what can be read', 'not_tar', entries);
  return value;
}

/** A NUL-terminated text field, as UTF-8. */
function textOf(buf: Buffer, start: number, length: number): string {
  const nul = buf.indexOf(0, start);
  return buf.toString('utf8', start, nul === -1 || nul > start + length ? start + length : nul);
}

/** A pax header's records, `<length> <key>=<value>\n` each. */
function paxRecords(content: Buffer, entries: number): Map<string, string> {
  const records = new Map<string, string>();
  for (let at = 0; at < content.length && content[at] !== 0;) {
    const space = content.indexOf(0x20, at);
    const digits = space === -1 ? '' : content.toString('latin1', at, space);
    const length = /^[0-9]{1,9}$/.test(digits) ? Number(digits) : NaN;
    if (!(length > space - at) || at + length > content.length || content[at + length - 1] !== 0x0a) {
      throw new TarError('a pax header holds a record that is not `<length> <key>=<value>`', 'not_tar', entries);
    }
    const record = content.toString('utf8', space + 1, at + length - 1);
    const eq = record.indexOf('=');
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}
