import { openAsBlob, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The embedded database's installation: PostgreSQL's `share` and `lib` folders, which PGlite ships as
 * one file (`pglite.data`, about 6 MB) and unpacks into its in-memory file system as views on one
 * buffer read whole. That buffer stays resident for as long as the database is open, though most of
 * it is only ever read by initdb, which runs in a process of its own (`createDataDirApart`), or by
 * features the coordinator never uses.
 *
 * So a serving coordinator hands PGlite the installation itself, keeps hold of the buffer PGlite reads
 * it into, and once the database is open copies the files a running server may read into one buffer
 * of their own size, removes the rest, and releases the whole one.
 */

/** Files a running server never reads for the coordinator. Anything not named here is kept. */
const NOT_SERVED: readonly RegExp[] = [
  // initdb's inputs: the bootstrap catalog and the SQL it runs to create a database.
  /^\/pglite\/share\/postgresql\/(postgres\.bki|information_schema\.sql|system_\w+\.sql|snowball_create\.sql|sql_features\.txt|errcodes\.txt)$/,
  // ICU's data, read only for ICU collations: the coordinator's database uses the builtin C locale.
  /^\/pglite\/icu\//,
  // Conversions between encodings: the server and its one client both speak UTF-8.
  /^\/pglite\/lib\/postgresql\/\w+_and_\w+\.so$/,
  // Full-text search's stemmers, replication's receiver, and the extension build kit: never used.
  /^\/pglite\/lib\/postgresql\/(dict_snowball|libpqwalreceiver)\.so$/,
  /^\/pglite\/lib\/postgresql\/pgxs\//,
];

/** The folders PGlite unpacks the installation into. */
const UNPACKED_INTO = ['/home', '/pglite'];

/** The part of Emscripten's file system API this uses (PGlite's `Module.FS`). */
export interface InstallationFs {
  readdir(path: string): string[];
  lstat(path: string): { mode: number; size: number };
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
  lookupPath(path: string, opts?: { follow?: boolean }): { node: { mount: unknown } };
  open(path: string, flags: string, mode?: number): unknown;
  read(stream: unknown, buffer: Uint8Array, offset: number, length: number, position?: number): number;
  write(stream: unknown, buffer: Uint8Array, offset: number, length: number, position?: number, canOwn?: boolean): number;
  close(stream: unknown): void;
  unlink(path: string): void;
  chmod(path: string, mode: number): void;
}

/**
 * PGlite's installation file as a Blob that remembers the one buffer it was read into
 * (`fsBundle`, which PGlite reads once).
 */
export class InstallationBundle extends Blob {
  private held?: ArrayBuffer;

  private constructor(
    private readonly path: string,
    file: Blob,
  ) {
    super([file]);
  }

  static async open(): Promise<InstallationBundle> {
    const require = createRequire(import.meta.url);
    const path = join(dirname(require.resolve('@electric-sql/pglite')), 'pglite.data');
    return new InstallationBundle(path, await openAsBlob(path));
  }

  /**
   * The file read in one piece into a buffer of its own size, on this thread: a Blob's own reading
   * goes in pieces through a worker thread, whose allocator keeps what they took after they are freed.
   */
  override async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = readFileSync(this.path);
    const buffer =
      bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    this.held = buffer as ArrayBuffer;
    return this.held;
  }

  /**
   * Keep only what a serving database reads, in a buffer of its own, and release the installation's.
   * False when PGlite did not read this bundle, and then nothing is touched.
   */
  keepServingFiles(fs: InstallationFs): boolean {
    const held = this.held;
    if (!held || held.detached) return false;
    const rootMount = fs.lookupPath('/').node.mount;
    const kept: { path: string; mode: number; size: number }[] = [];
    const walk = (dir: string): void => {
      for (const name of fs.readdir(dir)) {
        if (name === '.' || name === '..') continue;
        const path = `${dir}/${name}`;
        // The data dir is mounted from the host's disk somewhere below: not the installation's.
        if (fs.lookupPath(path, { follow: false }).node.mount !== rootMount) continue;
        const { mode, size } = fs.lstat(path);
        if (fs.isDir(mode)) walk(path);
        else if (!fs.isFile(mode)) continue;
        else if (NOT_SERVED.some((re) => re.test(path))) fs.unlink(path);
        else kept.push({ path, mode, size });
      }
    };
    for (const dir of UNPACKED_INTO) walk(dir);

    // Every file left in these folders is rewritten, so none is still a view on the installation's
    // buffer when it is released: such a file would read as empty.
    const own = new Uint8Array(kept.reduce((n, f) => n + f.size, 0));
    let offset = 0;
    for (const file of kept) {
      const from = fs.open(file.path, 'r');
      const read = fs.read(from, own, offset, file.size, 0);
      fs.close(from);
      if (read !== file.size) throw new Error(`the embedded database's ${file.path}: read ${read} of its ${file.size} bytes`);
      fs.unlink(file.path);
      const to = fs.open(file.path, 'w', file.mode);
      // As PGlite's unpacking does: the file owns its part of the buffer, nothing is copied again.
      fs.write(to, own, offset, file.size, 0, true);
      fs.close(to);
      fs.chmod(file.path, file.mode);
      offset += file.size;
    }
    held.transfer(0);
    return true;
  }
}
