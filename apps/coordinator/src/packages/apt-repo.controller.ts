import { Controller, Get, Headers, Inject, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { APT_REPOSITORY, type AptRepository } from './apt-repository.js';
import { DB, type Db } from '../db/index.js';
import { DomainError, quoteInput, Anonymous } from '../common/index.js';
import { readBlobs } from '../bundles/index.js';
import { isPackageBlob } from './packages.repository.js';

const POOL_FILE = /^([0-9a-f]{64})\.deb$/;
const FLAT_DIST = '/repo/debian/./';

/**
 * apt asks a flat repository (`deb … <url>/repo/debian/ ./`) for `<url>/repo/debian/./InRelease`,
 * with the `./` left in; routers do not fold it, so it is folded here, for this prefix only.
 */
export function foldFlatDist(url: string): string {
  return url.startsWith(FLAT_DIST) ? `/repo/debian/${url.slice(FLAT_DIST.length)}` : url;
}

/**
 * The mesh's flat apt repository, read by stock apt on the nodes:
 * `deb [signed-by=/usr/share/keyrings/florete.gpg] <coordinator>/repo/debian/ ./`.
 *
 * Anonymous, like Debian's own mirrors: apt has no way to send the node's bearer credential, the
 * packages hold no secrets (secrets go to a node in its signed bundle, to that node alone), and what
 * makes a package trustworthy is the signed Release, not who could download it. Only files of pushed
 * packages are served here, never other blobs; the anonymous rate limit applies.
 */
@Controller('repo/debian')
export class AptRepoController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(APT_REPOSITORY) private readonly apt: AptRepository,
  ) {}

  /** Packages, Packages.gz, Release, InRelease, Release.gpg, and the public key as key.gpg and key.asc. */
  @Get(':file')
  @Anonymous()
  async index(@Param('file') name: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    const snapshot = await this.apt.current();
    const file = snapshot.files.get(name);
    if (!file)
      throw new DomainError(
        'not_found',
        `the repository has no file ${quoteInput(name)}: it serves ${[...snapshot.files.keys()].join(', ')} and pool/<sha256>.deb`,
      );
    // No Last-Modified: two pushes within one second would look unchanged to If-Modified-Since.
    void reply.header('etag', file.etag).header('cache-control', 'no-cache');
    if (ifNoneMatch === file.etag) return void reply.status(304).send();
    void reply.status(200).type(file.type).send(file.bytes);
  }

  /** A package's file, by the sha256 the Packages index names; content-addressed, so cacheable for good. */
  @Get('pool/:file')
  @Anonymous()
  async pool(@Param('file') name: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    const sha = POOL_FILE.exec(name)?.[1];
    if (!sha || !(await isPackageBlob(this.db.kysely, sha))) throw new DomainError('not_found', `the repository has no package file ${quoteInput(name)}`);
    const etag = `"${sha}"`;
    void reply.header('etag', etag).header('cache-control', 'public, max-age=31536000, immutable');
    if (ifNoneMatch === etag) return void reply.status(304).send();
    const content = (await readBlobs(this.db.kysely, [sha])).get(sha);
    if (!content) throw new Error(`package blob ${sha} is missing from the blob store`);
    void reply.status(200).type('application/vnd.debian.binary-package').send(Buffer.from(content));
  }
}
