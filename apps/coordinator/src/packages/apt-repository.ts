import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import { gzipIndex, renderPackages, renderRelease } from './apt-index.js';
import { lastPushPosition, listPackages } from './packages.repository.js';
import type { RepoKey } from './repo-key.js';

/** The Nest token of the mesh's apt repository, provided by the packages module. */
export const APT_REPOSITORY = Symbol('APT_REPOSITORY');

/** One index file of the repository, ready to serve. */
export interface IndexFile {
  readonly bytes: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** The signed indices for the packages up to one ledger position. */
export interface RepoSnapshot {
  readonly position: number;
  readonly date: Date;
  readonly files: ReadonlyMap<string, IndexFile>;
}

const file = (bytes: Buffer | string, type: string): IndexFile => {
  const b = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  return { bytes: b, type, etag: `"${createHash('sha256').update(b).digest('hex').slice(0, 32)}"` };
};

/**
 * The repository's index files, rendered and signed once per change, not per request: a request
 * costs one indexed query (the position of the last push) and, when it moved (a push, here or on
 * another replica), one rendering and two signatures, shared by every request waiting for it.
 */
export class AptRepository {
  private snapshot: RepoSnapshot | null = null;
  private building: Promise<RepoSnapshot> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    readonly key: RepoKey,
  ) {}

  async current(): Promise<RepoSnapshot> {
    const position = await lastPushPosition(this.db);
    if (this.snapshot && this.snapshot.position === position) return this.snapshot;
    return this.rebuild();
  }

  /** Renders the indices again now: called after a push so the first node to ask does not wait. */
  async refresh(): Promise<RepoSnapshot> {
    return this.rebuild();
  }

  private rebuild(): Promise<RepoSnapshot> {
    // One rendering at a time; a caller arriving during one waits for it, then checks again.
    const run = (this.building ?? Promise.resolve(null))
      .catch(() => null)
      .then(async () => {
        const position = await lastPushPosition(this.db);
        if (this.snapshot && this.snapshot.position === position) return this.snapshot;
        const built = await this.render();
        if (!this.snapshot || built.position >= this.snapshot.position) this.snapshot = built;
        return built;
      });
    this.building = run;
    void run
      .finally(() => {
        if (this.building === run) this.building = null;
      })
      .catch(() => undefined);
    return run;
  }

  private async render(): Promise<RepoSnapshot> {
    const packages = await listPackages(this.db);
    const position = packages.length ? packages[packages.length - 1].position : 0;
    // The date of the last push, so every replica renders the same Release; an empty repository is dated now.
    const date = packages.length ? new Date(packages[packages.length - 1].recorded_at) : new Date();
    const index = renderPackages(packages);
    const gz = gzipIndex(index);
    const release = renderRelease({
      date,
      files: [
        { name: 'Packages', bytes: index },
        { name: 'Packages.gz', bytes: gz },
      ],
    });
    const [inRelease, releaseGpg, publicKey] = await Promise.all([
      this.key.clearsign(release.toString('utf8')),
      this.key.detachedSign(release),
      this.key.publicKeys(),
    ]);
    const files = new Map<string, IndexFile>([
      ['Packages', file(index, 'text/plain; charset=utf-8')],
      ['Packages.gz', file(gz, 'application/gzip')],
      ['Release', file(release, 'text/plain; charset=utf-8')],
      ['InRelease', file(inRelease, 'text/plain; charset=utf-8')],
      ['Release.gpg', file(releaseGpg, 'application/pgp-signature')],
      ['key.gpg', file(publicKey.binary, 'application/pgp-keys')],
      ['key.asc', file(publicKey.armored, 'application/pgp-keys')],
    ]);
    return { position, date, files };
  }
}
