import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { PublishNodesQuery } from '#contracts';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import { DomainError, parseInput, Access, CurrentPrincipal, scopeOf, type Principal } from '../common/index.js';
import { loadNodeRecords } from '../fleet/index.js';
import { scopedFilter } from '../identity/index.js';
import { readPublish } from './queries.repository.js';
import { readPublishNodes, readStaleCheckpoints } from './views.repository.js';
import { fleetOverview, publishStatuses, publishTimeline, type PublishNodeFacts } from './views.js';

const iso = (d: Date | string): string => new Date(d).toISOString();
/** How long one reading of a publish's nodes answers the asks that follow it. */
const CACHE_MS = 750;
/** How long one reading of the fleet overview answers the asks that follow it (the console asks every 10 s). */
const OVERVIEW_MS = 2000;

/**
 * Views a console or a waiting client asks for again and again, counted here so that the answer's
 * size does not grow with the fleet: the fleet overview, a publish's counts and convergence, and a
 * publish's nodes a page at a time. A scoped token sees and counts its own nodes only.
 */
@Controller('v1')
export class ViewsController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** The overview lately worked out, by scope: every open console asks every 10 s, and one reading serves them for OVERVIEW_MS. */
  private readonly overviews = new Map<string, { readonly at: number; readonly value: Promise<ReturnType<typeof fleetOverview>> }>();

  @Get('fleet/overview')
  @Access('reader')
  overview(@CurrentPrincipal() who: Principal) {
    const key = JSON.stringify(scopeOf(who));
    const at = Date.now();
    const hit = this.overviews.get(key);
    if (hit && at - hit.at < OVERVIEW_MS) return hit.value;
    for (const [k, v] of this.overviews) if (at - v.at >= OVERVIEW_MS) this.overviews.delete(k);
    const value = this.readOverview(who);
    this.overviews.set(key, { at, value });
    value.catch(() => this.overviews.delete(key));
    return value;
  }

  private async readOverview(who: Principal) {
    const now = new Date();
    const keep = await scopedFilter(this.db.kysely, scopeOf(who), <R>(r: R) => r);
    const [records, stale] = await Promise.all([loadNodeRecords(this.db.kysely, 'all', now), readStaleCheckpoints(this.db.kysely)]);
    return fleetOverview(
      [...records.values()].filter((r) => keep(r) !== null),
      stale,
      now,
    );
  }

  @Get('publishes/:id/counts')
  @Access('reader')
  async publishCounts(@Param('id') id: string, @CurrentPrincipal() who: Principal) {
    const { publish, rows, counts } = await this.publishNodes(id, who);
    const { changed: _changed, ...summary } = publish;
    return { ...summary, total: rows.length, counts, timeline: publishTimeline(rows, new Date(publish.recorded_at), new Date()) };
  }

  @Get('publishes/:id/nodes')
  @Access('reader')
  async publishNodePage(@Param('id') id: string, @Query() query: unknown, @CurrentPrincipal() who: Principal) {
    const q = parseInput(PublishNodesQuery, query, 'query');
    const { rows, counts } = await this.publishNodes(id, who);
    const matching = rows.filter((r) => (q.status === undefined || r.status === q.status) && (q.cursor === undefined || r.change.node > q.cursor));
    const page = matching.slice(0, q.limit);
    return {
      items: page.map((r) => ({
        ...r.change,
        status: r.status,
        reason: r.reason,
        ineligible: r.ineligible,
        last_contact: r.lastContact ? iso(r.lastContact) : null,
        activation: r.outcomes.find((o) => o.version === r.change.to)?.activation ?? null,
      })),
      next_cursor: matching.length > q.limit ? page[page.length - 1].change.node : null,
      counts,
      total: rows.length,
    };
  }

  /**
   * What publishNodes worked out lately, by publish and scope: a page asks for the counts and then
   * its nodes, and several viewers poll the same publish, so one reading of a 10,000-node publish
   * serves them all for CACHE_MS (under the console's and `publish --wait`'s poll intervals, so each
   * poll still sees a newer reading than the last).
   */
  private readonly recent = new Map<string, { readonly at: number; readonly value: Promise<Awaited<ReturnType<ViewsController['readPublishNodes']>>> }>();

  private publishNodes(id: string, who: Principal) {
    const pid = parseInput(z.uuid(), id, 'path');
    const key = `${pid} ${JSON.stringify(scopeOf(who))}`;
    const now = Date.now();
    const hit = this.recent.get(key);
    if (hit && now - hit.at < CACHE_MS) return hit.value;
    for (const [k, v] of this.recent) if (now - v.at >= CACHE_MS) this.recent.delete(k);
    const value = this.readPublishNodes(pid, who);
    this.recent.set(key, { at: now, value });
    value.catch(() => this.recent.delete(key));
    return value;
  }

  /** The publish, and each node it changed (in name order) that the caller may see, with its status. */
  private async readPublishNodes(pid: string, who: Principal) {
    const row = await readPublish(this.db.kysely, pid);
    if (!row) throw new DomainError('unknown_publish', `no publish ${pid}`);
    const publish = {
      publish_id: row.publish_id,
      position: Number(row.position),
      kind: row.kind,
      actor: row.actor,
      message: row.message,
      recorded_at: iso(row.recorded_at),
      changed: row.changed as { node: string; from: number; to: number }[],
      unchanged: row.unchanged,
      accepted_ineligible: (row.accepted_ineligible ?? []) as unknown[],
    };
    const keep = await scopedFilter(this.db.kysely, scopeOf(who), <R>(r: R) => r);
    const changes = publish.changed.filter((c) => keep(c) !== null).sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    const minVersion = changes.length > 0 ? Math.min(...changes.map((c) => c.to)) : 0;
    const nodes = changes.map((c) => c.node);
    const read = await readPublishNodes(this.db.kysely, nodes, minVersion);
    const facts: PublishNodeFacts[] = changes.map((c) => {
      const r = read.get(c.node)!;
      return { change: c, ...r, reportedAt: r.outcomes.find((o) => o.version === c.to)?.reportedAt ?? null };
    });
    const { counts, rows: statuses } = publishStatuses(facts);
    return { publish, rows: statuses, counts };
  }
}
