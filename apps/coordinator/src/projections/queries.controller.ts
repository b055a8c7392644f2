import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { DiffQuery, MAX_VERSION, NodeName, PageQuery, VersionParam } from '#contracts';
import { z } from 'zod';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { Access } from '../identity/auth.decorators.js';
import { readBlobs } from '../bundles/blobs.repository.js';
import { loadVersion } from './heads.repository.js';
import { diffSets } from './artifact-diff.js';

const NoQuery = z.strictObject({});
const iso = (d: Date | string): string => new Date(d).toISOString();

@Controller('v1')
export class QueriesController {
  constructor(@Inject(DB) private readonly db: Db) {}

  @Get('nodes')
  @Access('reader')
  async nodes(@Query() query: unknown) {
    parseInput(NoQuery, query, 'query');
    const rows = await this.db.kysely
      .selectFrom('node_heads as h')
      .leftJoin('node_status as s', 's.node', 'h.node')
      .select(['h.node', 'h.version', 'h.set_digest', 'h.retired', 'h.updated_at', 'h.publish_id', 's.applied_version', 's.last_contact', 's.last_result'])
      .orderBy('h.node')
      .execute();
    return {
      items: rows.map((r) => ({
        node: r.node,
        version: r.version,
        set_digest: r.set_digest,
        retired: r.retired,
        updated_at: iso(r.updated_at),
        publish_id: r.publish_id,
        applied_version: r.applied_version ?? null,
        last_contact: r.last_contact ? iso(r.last_contact) : null,
        last_result: r.last_result ?? null,
      })),
    };
  }

  @Get('nodes/:node/versions')
  @Access('reader')
  async versions(@Param('node') node: string, @Query() query: unknown) {
    const name = parseInput(NodeName, node, 'path');
    const q = parseInput(PageQuery, query, 'query');
    await this.requireNode(name);
    if (q.cursor && Number(q.cursor) > MAX_VERSION) throw new DomainError('invalid_query', 'query.cursor: must be a cursor returned by a previous page');
    let select = this.db.kysely.selectFrom('node_versions').selectAll().where('node', '=', name);
    if (q.cursor) select = select.where('version', '<', Number(q.cursor));
    const rows = await select.orderBy('version', 'desc').limit(q.limit + 1).execute();
    const page = rows.slice(0, q.limit);
    return {
      items: page.map((r) => ({
        version: r.version,
        set_digest: r.set_digest,
        retired: r.retired,
        publish_id: r.publish_id,
        actor: r.actor,
        message: r.message,
        recorded_at: iso(r.recorded_at),
        position: Number(r.position),
      })),
      next_cursor: rows.length > q.limit ? String(page[page.length - 1].version) : null,
    };
  }

  @Get('nodes/:node/versions/:version')
  @Access('reader')
  async version(@Param('node') node: string, @Param('version') version: string) {
    const name = parseInput(NodeName, node, 'path');
    const v = parseInput(VersionParam, version, 'path');
    const set = await this.requireVersion(name, v);
    const blobs = await readBlobs(this.db.kysely, set.artifacts.map((a) => a.sha256));
    return {
      node: name,
      version: v,
      set_digest: set.setDigest,
      retired: set.retired,
      artifacts: set.artifacts.map((a) => {
        const bytes = Buffer.from(blobs.get(a.sha256) ?? new Uint8Array());
        const text = decodeUtf8(bytes);
        return { name: a.name, sha256: a.sha256, size: a.size, encoding: text === null ? 'base64' : 'utf-8', content: text ?? bytes.toString('base64') };
      }),
    };
  }

  @Get('nodes/:node/diff')
  @Access('reader')
  async diff(@Param('node') node: string, @Query() query: unknown) {
    const name = parseInput(NodeName, node, 'path');
    const q = parseInput(DiffQuery, query, 'query');
    const from = q.from === 0 ? { version: 0, setDigest: '', retired: false, artifacts: [] } : await this.requireVersion(name, q.from);
    const to = await this.requireVersion(name, q.to);
    const blobs = await readBlobs(this.db.kysely, [...from.artifacts, ...to.artifacts].map((a) => a.sha256));
    const text = (sha: string) => {
      const bytes = Buffer.from(blobs.get(sha) ?? new Uint8Array());
      return decodeUtf8(bytes) ?? `(binary, ${bytes.byteLength} bytes, sha256 ${sha})\n`;
    };
    return { node: name, from: q.from, to: q.to, changed: diffSets(name, from, to, text) };
  }

  @Get('publishes')
  @Access('reader')
  async publishes(@Query() query: unknown) {
    const q = parseInput(PageQuery, query, 'query');
    let select = this.db.kysely.selectFrom('publishes').selectAll();
    if (q.cursor) select = select.where('position', '<', Number(q.cursor));
    const rows = await select.orderBy('position', 'desc').limit(q.limit + 1).execute();
    const page = rows.slice(0, q.limit);
    return { items: page.map(toPublish), next_cursor: rows.length > q.limit ? String(Number(page[page.length - 1].position)) : null };
  }

  @Get('publishes/:id')
  @Access('reader')
  async publishById(@Param('id') id: string) {
    const pid = parseInput(z.uuid(), id, 'path');
    const row = await this.db.kysely.selectFrom('publishes').selectAll().where('publish_id', '=', pid).executeTakeFirst();
    if (!row) throw new DomainError('unknown_publish', `no publish ${pid}`);
    return toPublish(row);
  }

  private async requireNode(node: string): Promise<void> {
    const row = await this.db.kysely.selectFrom('node_heads').select('node').where('node', '=', node).executeTakeFirst();
    if (!row) throw new DomainError('unknown_node', `node ${node} has never been published`, { node });
  }

  private async requireVersion(node: string, version: number) {
    const set = await loadVersion(this.db.kysely, node, version);
    if (set) return set;
    await this.requireNode(node);
    throw new DomainError('unknown_version', `node ${node} has no version ${version}`, { node, version });
  }
}

function toPublish(r: { publish_id: string; position: unknown; kind: string; actor: string; message: string; recorded_at: Date | string; changed: unknown; unchanged: number }) {
  return { publish_id: r.publish_id, position: Number(r.position), kind: r.kind, actor: r.actor, message: r.message, recorded_at: iso(r.recorded_at), changed: r.changed, unchanged: r.unchanged };
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
