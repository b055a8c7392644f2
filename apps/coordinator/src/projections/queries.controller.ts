import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { DiffQuery, HeadsQuery, MAX_VERSION, NodeName, NodesQuery, PageQuery, VersionParam } from '#contracts';
import { loadNodeRecords, nodeNamesAfter, type NodeRecord, convergence, credentialState, lifecycleState, publishNodeStatus } from '../fleet/index.js';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import { HeadBucketIndex } from './head-bucket-index.js';
import { DomainError, parseInput, Access, CurrentPrincipal, scopeOf, type Principal } from '../common/index.js';
import { readBlobs } from '../bundles/index.js';
import { loadVersion, readVersionsPage } from '../ledger/index.js';
import { isPublished, readHeadsPage, readNodeResources, readOutcomes, readPublish, readPublishesPage } from './queries.repository.js';
import { failedLines, recordedLabelBuckets, scopedFilter, scopeView, type ScopeView } from '../identity/index.js';

const iso = (d: Date | string): string => new Date(d).toISOString();

@Controller('v1')
export class QueriesController {
  constructor(
    @Inject(DB) private readonly db: Db,
    /** The heads by bucket, brought forward from the heads stamped since the last ask or append. */
    private readonly buckets: HeadBucketIndex,
  ) {}

  /**
   * Every node's head as digests (version, set digest, each artifact's name, sha256 and size), a page
   * at a time in name order, with the ledger position the page was read at: a plan compares a whole
   * tree with no artifact content read. `buckets` keeps the heads of nodes in those buckets only;
   * `artifacts=false` leaves out each head's artifacts, for a publish that compares set digests.
   */
  @Get('heads')
  @Access('reader')
  async heads(@Query() query: unknown) {
    const q = parseInput(HeadsQuery, query, 'query');
    const limit = q.limit ?? 1000;
    const artifacts = q.artifacts !== 'false';
    const { position, rows } = await readHeadsPage(this.db.kysely, this.buckets, {
      limit,
      artifacts,
      ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
      ...(q.buckets !== undefined ? { buckets: q.buckets } : {}),
    });
    const page = rows.slice(0, limit);
    return {
      items: page.map((r) => ({
        node: r.node,
        version: r.version,
        set_digest: r.set_digest,
        retired: r.retired,
        ...(r.artifacts ? { artifacts: r.artifacts.map((a) => ({ name: a.name, sha256: a.sha256, size: a.size })) } : {}),
      })),
      next_cursor: rows.length > limit ? page[page.length - 1].node : null,
      position,
    };
  }

  /**
   * The digest of each bucket of active heads at one ledger position (HeadBuckets): a client holding a
   * tree computes the same and asks only for the heads of the buckets that differ; and the digest of
   * each bucket of the recorded labels, so that it sends only the labels of the buckets that differ.
   */
  @Get('heads/buckets')
  @Access('reader')
  async headBuckets() {
    const view = await this.buckets.read(this.db.kysely);
    return { position: view.position, buckets: view.buckets, labels: await recordedLabelBuckets(this.db.kysely) };
  }

  /**
   * Every node the coordinator knows of, with its lifecycle state, credential and convergence;
   * filterable. Contact ages and the contact filters use this coordinator's clock, so what the list
   * shows and what it filters on agree whatever the caller's clock says.
   */
  @Get('nodes')
  @Access('reader')
  async nodes(@Query() query: unknown, @CurrentPrincipal() who: Principal) {
    const q = parseInput(NodesQuery, query, 'query');
    const now = new Date();
    const keep = await scopedFilter(this.db.kysely, scopeOf(who), nodeFilter(q, now));
    if (q.limit === undefined) {
      const items = [];
      for (const r of (await loadNodeRecords(this.db.kysely, 'all', now)).values()) {
        const row = keep(r);
        if (row) items.push(row);
      }
      return { items };
    }
    // A page in name order: names are read in batches past the cursor and filtered until the page is
    // full, so a page of a 100,000-node fleet loads a few hundred records, not all of them. A filter
    // that matches almost nothing stops after a bounded scan and hands back a cursor to go on from.
    const items: ReturnType<typeof summary>[] = [];
    const batch = Math.max(q.limit, 200);
    let after = q.cursor ?? null;
    for (let round = 0; round < 20; round++) {
      const names = await nodeNamesAfter(this.db.kysely, after, batch, q.q ?? null, now);
      const records = await loadNodeRecords(this.db.kysely, names, now);
      for (const name of names) {
        const row = keep(records.get(name)!);
        if (row) items.push(row);
        after = name;
        if (items.length === q.limit) return { items, next_cursor: names.length === batch || name !== names[names.length - 1] ? name : null };
      }
      if (names.length < batch) return { items, next_cursor: null };
    }
    return { items, next_cursor: after };
  }

  /** One node as the list shows it, plus what its agent last reported doing to its host resources. */
  @Get('nodes/:node')
  @Access('reader')
  async node(@Param('node') node: string) {
    const name = parseInput(NodeName, node, 'path');
    const now = new Date();
    const r = (await loadNodeRecords(this.db.kysely, [name], now)).get(name)!;
    if (!r.head && !r.status && r.liveCredentials + r.revokedCredentials === 0 && !r.pendingToken) {
      throw new DomainError('unknown_node', `no node ${name} is known: never published, given an enrolment token or enrolled`, { node: name });
    }
    const contact = r.status?.last_contact ? new Date(r.status.last_contact) : null;
    const age = contact ? Math.max(0, Math.floor((now.getTime() - contact.getTime()) / 1000)) : null;
    const resources = await readNodeResources(this.db.kysely, name);
    return { ...summary(r, lifecycleState(r), credentialState(r), convergence(r), contact, age), resources };
  }

  @Get('nodes/:node/versions')
  @Access('reader')
  async versions(@Param('node') node: string, @Query() query: unknown) {
    const name = parseInput(NodeName, node, 'path');
    const q = parseInput(PageQuery, query, 'query');
    await this.requireNode(name);
    if (q.cursor && Number(q.cursor) > MAX_VERSION) throw new DomainError('invalid_query', 'query.cursor: must be a cursor returned by a previous page');
    const rows = await readVersionsPage(this.db.kysely, name, q.cursor ? Number(q.cursor) : null, q.limit);
    const page = rows.slice(0, q.limit);
    const outcomes = new Map(
      page.length === 0
        ? []
        : (
            await readOutcomes(
              this.db.kysely,
              name,
              page.map((r) => r.version),
            )
          ).map((o) => [o.version, { result: o.result, error: o.error, reported_at: iso(o.reported_at), activation: o.activation ?? null }]),
    );
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
        outcome: outcomes.get(r.version) ?? null,
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
    const blobs = await readBlobs(
      this.db.kysely,
      set.artifacts.map((a) => a.sha256),
    );
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
    const blobs = await readBlobs(
      this.db.kysely,
      [...from.artifacts, ...to.artifacts].map((a) => a.sha256),
    );
    const text = (sha: string) => {
      const bytes = Buffer.from(blobs.get(sha) ?? new Uint8Array());
      return decodeUtf8(bytes) ?? `(binary, ${bytes.byteLength} bytes, sha256 ${sha})\n`;
    };
    // Loaded on the first diff asked for: the diff library is no part of a coordinator that serves polls.
    const { diffSets } = await import('./artifact-diff.js');
    return { node: name, from: q.from, to: q.to, changed: diffSets(name, from, to, text) };
  }

  /**
   * Publishes, newest first. A scoped token sees those that changed a node of its scope, each with
   * its changed nodes narrowed to them: pages are read in batches past the cursor until one is full,
   * and a scan that finds almost nothing stops after a bounded number and hands back a cursor.
   */
  @Get('publishes')
  @Access('reader')
  async publishes(@Query() query: unknown, @CurrentPrincipal() who: Principal) {
    const q = parseInput(PageQuery, query, 'query');
    const view = await scopeView(this.db.kysely, scopeOf(who));
    let before = q.cursor ? Number(q.cursor) : null;
    if (view === null) {
      const rows = await readPublishesPage(this.db.kysely, before, q.limit);
      const page = rows.slice(0, q.limit);
      return { items: page.map(toPublish), next_cursor: rows.length > q.limit ? String(Number(page[page.length - 1].position)) : null };
    }
    const items: ReturnType<typeof toPublish>[] = [];
    const batch = Math.max(q.limit, 100);
    for (let round = 0; round < 20; round++) {
      const rows = await readPublishesPage(this.db.kysely, before, batch - 1);
      for (const row of rows) {
        before = Number(row.position);
        const narrowed = narrowPublish(toPublish(row), view);
        if (narrowed) items.push(narrowed);
        if (items.length === q.limit) return { items, next_cursor: rows.length === batch || row !== rows[rows.length - 1] ? String(before) : null };
      }
      if (rows.length < batch) return { items, next_cursor: null };
    }
    return { items, next_cursor: before === null ? null : String(before) };
  }

  /**
   * One publish with each changed node's progress and the counts. A scoped token sees the nodes of
   * its scope and counts of those; a publish that changed none of them is unknown to it.
   */
  @Get('publishes/:id')
  @Access('reader')
  async publishById(@Param('id') id: string, @CurrentPrincipal() who: Principal) {
    const pid = parseInput(z.uuid(), id, 'path');
    const row = await readPublish(this.db.kysely, pid);
    const view = await scopeView(this.db.kysely, scopeOf(who));
    const publish = row && (view === null ? toPublish(row) : narrowPublish(toPublish(row), view));
    if (!publish) throw new DomainError('unknown_publish', `no publish ${pid}`);
    const changes = publish.changed as { node: string; from: number; to: number }[];
    const minVersion = Math.min(...changes.map((c) => c.to));
    const records = await loadNodeRecords(
      this.db.kysely,
      changes.map((c) => c.node),
      new Date(),
      Number.isFinite(minVersion) ? minVersion : 0,
    );
    const counts = { applied: 0, outstanding: 0, failed: 0, reverted: 0, superseded: 0 };
    const nodes = changes.map((c) => {
      const r = records.get(c.node)!;
      const { status, reason } = publishNodeStatus(c.to, r);
      counts[status]++;
      const activation = r.outcomes.find((o) => o.version === c.to)?.activation ?? null;
      return {
        ...c,
        status,
        reason,
        ineligible: r.status?.ineligible ?? false,
        last_contact: r.status?.last_contact ? iso(r.status.last_contact) : null,
        activation,
      };
    });
    return { ...publish, nodes, counts };
  }

  private async requireNode(node: string): Promise<void> {
    if (!(await isPublished(this.db.kysely, node))) throw new DomainError('unknown_node', `node ${node} has never been published`, { node });
  }

  private async requireVersion(node: string, version: number) {
    const set = await loadVersion(this.db.kysely, node, version);
    if (set) return set;
    await this.requireNode(node);
    throw new DomainError('unknown_version', `node ${node} has no version ${version}`, { node, version });
  }
}

/**
 * The fleet listing's filters as one predicate: the node's row when the record passes them all,
 * else null. Contact ages and the contact filters use this coordinator's clock, so what the list
 * shows and what it filters on agree whatever the caller's clock says.
 */
function nodeFilter(q: z.infer<typeof NodesQuery>, now: Date) {
  const before = q.contact_before ? Date.parse(q.contact_before) : null;
  const after = q.contact_after ? Date.parse(q.contact_after) : null;
  return (r: NodeRecord) => {
    if (q.q && !r.node.includes(q.q)) return null;
    const state = lifecycleState(r);
    const credential = credentialState(r);
    const conv = convergence(r);
    if (q.state && q.state !== state && q.state !== conv) return null;
    if (q.credential && q.credential !== credential) return null;
    const contact = r.status?.last_contact ? new Date(r.status.last_contact) : null;
    const age = contact ? Math.max(0, Math.floor((now.getTime() - contact.getTime()) / 1000)) : null;
    if (before !== null && contact && contact.getTime() >= before) return null;
    if (after !== null && (!contact || contact.getTime() < after)) return null;
    // Never is older than any age: a node that never made contact is one to chase too.
    if (q.contact_older_than !== undefined && age !== null && age <= q.contact_older_than) return null;
    return summary(r, state, credential, conv, contact, age);
  };
}

/** A node's row in the fleet listing (NodeSummary). */
function summary(
  r: NodeRecord,
  state: ReturnType<typeof lifecycleState>,
  credential: ReturnType<typeof credentialState>,
  conv: ReturnType<typeof convergence>,
  contact: Date | null,
  age: number | null,
) {
  return {
    node: r.node,
    version: r.head?.version ?? null,
    set_digest: r.headRow?.set_digest ?? null,
    retired: r.head?.retired ?? false,
    updated_at: r.headRow ? iso(r.headRow.updated_at) : null,
    publish_id: r.headRow?.publish_id ?? null,
    state,
    credential,
    convergence: conv,
    ineligible: r.status?.ineligible ?? false,
    failed_briefing: r.status?.ineligible ? failedLines(r.status.briefing) : [],
    applied_version: r.appliedVersion,
    last_contact: contact ? contact.toISOString() : null,
    last_contact_age_seconds: age,
    last_result: r.status?.last_result ?? null,
    last_error: r.status?.last_error ?? null,
    agent_version: r.status?.agent_version ?? null,
  };
}

function toPublish(r: {
  publish_id: string;
  position: unknown;
  kind: string;
  actor: string;
  message: string;
  recorded_at: Date | string;
  changed: unknown;
  unchanged: number;
  accepted_ineligible: unknown;
}) {
  return {
    publish_id: r.publish_id,
    position: Number(r.position),
    kind: r.kind,
    actor: r.actor,
    message: r.message,
    recorded_at: iso(r.recorded_at),
    changed: r.changed,
    unchanged: r.unchanged,
    accepted_ineligible: r.accepted_ineligible ?? [],
  };
}

/**
 * A publish as a scoped token sees it: its changed nodes and accepted ineligible ones narrowed to
 * the scope, `scoped` set; null when it changed none of them. `unchanged` stays the tree's count.
 */
function narrowPublish(p: ReturnType<typeof toPublish>, view: ScopeView) {
  const changed = (p.changed as { node: string }[]).filter((c) => view.selects(c.node));
  if (changed.length === 0) return null;
  const ineligible = (p.accepted_ineligible as { node: string }[]).filter((c) => view.selects(c.node));
  return { ...p, changed, accepted_ineligible: ineligible, scoped: true };
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
