import { Controller, Get, Inject, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { encodeEntryBundle, parseTilePath, tileCoords, tileWidth, TILE_WIDTH } from '#bundle';
import { DB, type Db } from '../db/index.js';
import { CosignedCheckpointQuery } from '#contracts';
import { DomainError, parseInput, quoteInput, Access, WholeFleet } from '../common/index.js';
import { readChainHashes, readTreeHashes } from '../ledger/index.js';
import { readTreeCheckpoint } from './tree.repository.js';
import { readCosignatures } from './witnesses.repository.js';

const PREFIX = '/v1/ledger/tree/';

/**
 * The ledger's Merkle tree, read-only, as C2SP tlog-tiles under `/v1/ledger/tree/`: `checkpoint`
 * (the signed tree checkpoint), `tile/<L>/<N>[.p/<W>]` (256 hashes of tree level 8·L a tile, the
 * last one of a level partial) and `tile/entries/<N>[.p/<W>]` (the leaves' entries: each event's
 * 32-byte chain hash, uint16 length-prefixed). Tiles are served up to the signed checkpoint's size,
 * so what a client reads is what the checkpoint commits to; a full tile never changes and may be
 * cached for good, so a mirror of these files is as good as the coordinator to verify against.
 */
@Controller('v1/ledger/tree')
export class TreeController {
  constructor(@Inject(DB) private readonly db: Db) {}

  @Get('checkpoint')
  @Access('reader')
  async checkpoint(@Res() reply: FastifyReply): Promise<void> {
    const served = await readTreeCheckpoint(this.db.kysely);
    if (!served) throw new DomainError('not_found', 'the coordinator has not signed a tree checkpoint yet');
    void reply.header('cache-control', 'no-cache').type('text/plain; charset=utf-8').send(served.note);
  }

  /**
   * The tree checkpoint with the fleet's cosignatures of it appended as further signature lines
   * (C2SP tlog-cosignature): any note verifier that knows the nodes' keys counts them, and ignores
   * them otherwise. Only lines that verify under the key the ledger recorded for their node are
   * served; an auditor checks them again (retectl audit verify --witnesses). Names nodes, so a
   * scoped token is refused it.
   */
  @Get('checkpoint/cosigned')
  @Access('reader')
  @WholeFleet()
  async cosigned(@Query() query: unknown, @Res() reply: FastifyReply): Promise<void> {
    const { limit } = parseInput(CosignedCheckpointQuery, query, 'query');
    const served = await readTreeCheckpoint(this.db.kysely);
    if (!served) throw new DomainError('not_found', 'the coordinator has not signed a tree checkpoint yet');
    const lines = await readCosignatures(this.db.kysely, served.note, limit);
    void reply
      .header('cache-control', 'no-cache')
      .type('text/plain; charset=utf-8')
      .send(served.note + lines.map((l) => `${l}\n`).join(''));
  }

  @Get('tile/*')
  @Access('reader')
  async tile(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const path = req.url.split('?')[0].slice(PREFIX.length);
    const tile = parseTilePath(path);
    if (!tile)
      throw new DomainError(
        'not_found',
        `no tile ${quoteInput(path)}: tiles are tile/<L>/<N>[.p/<W>] and tile/entries/<N>[.p/<W>], N in three-digit elements (x001/234)`,
      );
    const served = await readTreeCheckpoint(this.db.kysely);
    const size = served?.size ?? 0;
    const available = tileWidth(tile.kind === 'entries' ? 0 : tile.level, tile.index, size);
    if (available < tile.width)
      throw new DomainError(
        'not_found',
        `the tree of the signed checkpoint (${size} entries) has ${available === 0 ? 'no such tile' : `only ${available} of the ${tile.width} hashes asked for`}`,
      );
    // A partial tile asked for while a wider one exists is still served as asked: clients name the width their checkpoint had.
    void reply.header('cache-control', tile.width === TILE_WIDTH ? 'private, max-age=31536000, immutable' : 'no-cache').type('application/octet-stream');
    if (tile.kind === 'entries') {
      const hashes = await readChainHashes(this.db.kysely, tile.index * TILE_WIDTH + 1, tile.width);
      return void reply.send(encodeEntryBundle(hashes.map((h) => Buffer.from(h, 'hex'))));
    }
    const coords = tileCoords(tile);
    const read = await readTreeHashes(this.db.kysely, coords);
    void reply.send(Buffer.concat(coords.map((c) => read(c))));
  }
}
