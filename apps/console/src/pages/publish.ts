import { useState } from 'preact/hooks';
import { query } from '../api.js';
import { ConvergenceChart } from '../charts.js';
import { localTime } from '../format.js';
import { html } from '../html.js';
import { Pending, useApi, useFollow } from '../load.js';
import { HINT } from '../hints.js';
import { href } from '../router.js';
import type { PublishCountsResponse, PublishList, PublishNodesPage, PublishNodeStatus } from '../types.js';
import { activationText } from './node.js';
import { PublishRollout } from './rollout.js';

const STATUSES = ['applied', 'outstanding', 'failed', 'reverted', 'superseded'] as const;
/** How often an open publish asks for its counts while any node is outstanding. */
const FOLLOW_MS = 2000;
const NODE_PAGE = 50;

/**
 * What one publish reached. While any node is outstanding it asks again for its counts only
 * (GET /v1/publishes/{id}/counts, the same few hundred bytes for 10 nodes or 10,000), and stops once
 * none is; its nodes are read a page at a time, of one status if chosen, when the viewer asks.
 */
export function PublishPage({ id }: { id: string }) {
  const [followed] = useFollow<PublishCountsResponse>(`/v1/publishes/${encodeURIComponent(id)}/counts`, FOLLOW_MS, (p) => p.counts.outstanding > 0);
  return html`<section aria-labelledby="publish-title">
    <p class="crumbs"><a href=${href.publishes()}>Publishes</a> / ${id.slice(0, 8)}</p>
    <h1 id="publish-title">Publish ${id.slice(0, 8)}</h1>
    <${Pending} loaded=${followed} what="the publish" />
    ${followed.state === 'done' && followed.problem && html`<p class="notice" role="alert">Could not refresh the counts (${followed.problem.message}); ${followed.following ? 'trying again.' : 'reload the page to try again.'}</p>`}
    ${followed.state === 'done' && html`<${PublishBody} p=${followed.data} following=${followed.following} />`}
    ${followed.state === 'done' && followed.data.total > 0 && html`<${PublishNodes} id=${id} counts=${followed.data.counts} total=${followed.data.total} />`}
  </section>`;
}

function PublishBody({ p, following }: { p: PublishCountsResponse; following: boolean }) {
  const total = p.total;
  const c = p.counts;
  return html`
    <dl class="facts">
      <dt>Message</dt><dd>${p.message || html`<span class="muted">(no message)</span>`}</dd>
      <dt>By</dt><dd>${p.actor}, <time datetime=${p.recorded_at}>${localTime(p.recorded_at)}</time></dd>
      <dt>Kind</dt><dd>${p.kind} at ledger position ${p.position}</dd>
      <dt>Nodes</dt><dd>${total.toLocaleString('en')} changed, ${p.unchanged.toLocaleString('en')} unchanged</dd>
      <${PublishRollout} publishId=${p.publish_id} message=${p.message} />
    </dl>
    <p class="progress-state" role="status" aria-live="polite">
      ${total === 0 ? 'This publish changed no node.' : c.outstanding === 0 ? `Done: no node is outstanding (${c.applied} applied, ${c.failed} failed, ${c.reverted} reverted, ${c.superseded} superseded).` : `Converging: ${c.outstanding} of ${total} outstanding; ${following ? `refreshing the counts every ${FOLLOW_MS / 1000} s` : 'not refreshing'}.`}
    </p>
    ${
      total > 0 &&
      html`<div class="bar" role="img" aria-label=${STATUSES.map((s) => `${c[s]} ${s}`).join(', ')}>
      ${STATUSES.filter((s) => c[s] > 0).map((s) => html`<span class=${`seg seg-${s}`} style=${`flex-grow:${c[s]}`} title=${`${c[s]} ${s}`}>${c[s]} ${s}</span>`)}
    </div>
    <h2>Convergence over time</h2>
    <${ConvergenceChart} points=${p.timeline} total=${total} />`
    }
  `;
}

/**
 * The publish's nodes a page at a time from the coordinator, filtered by status: read when the page
 * opens and when the viewer pages, filters or refreshes, never on the counts' timer.
 */
function PublishNodes({ id, counts, total }: { id: string; counts: PublishCountsResponse['counts']; total: number }) {
  // Failed and reverted nodes first when there are any: they are what the viewer came for.
  const [status, setStatus] = useState<PublishNodeStatus | ''>(() => (counts.failed > 0 ? 'failed' : counts.reverted > 0 ? 'reverted' : ''));
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1] ?? '';
  const [loaded, reload] = useApi<PublishNodesPage>(`/v1/publishes/${encodeURIComponent(id)}/nodes${query({ limit: NODE_PAGE, status, cursor })}`);
  const choose = (s: PublishNodeStatus | '') => {
    setStatus(s);
    setCursors([]);
  };
  return html`<h2 id="publish-nodes-title">Nodes</h2>
    <div class="filters" role="group" aria-label="Show nodes by status">
      ${(['', ...STATUSES] as const).map(
        (s) =>
          html`<button type="button" class="filter" aria-pressed=${status === s ? 'true' : 'false'} onClick=${() => choose(s)}>${s || 'all'} (${(s ? counts[s] : total).toLocaleString('en')})</button>`,
      )}
      <button type="button" onClick=${reload}>Refresh the list</button>
    </div>
    <${Pending} loaded=${loaded} what="the publish's nodes" />
    ${
      loaded.state === 'done' &&
      (loaded.data.items.length === 0
        ? html`<p class="empty">No node of this publish is ${status || 'listed'}.</p>`
        : html`<table class="nodes" aria-labelledby="publish-nodes-title">
        <thead><tr><th scope="col">Node</th><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Activation</th><th scope="col">Last contact</th></tr></thead>
        <tbody>
          ${loaded.data.items.map(
            (n) => html`<tr data-node=${n.node}>
              <td><a href=${href.node(n.node, n.from > 0 ? { from: String(n.from), to: String(n.to) } : {})}>${n.node}</a>${n.ineligible ? html` <span class="badge state-failed">ineligible</span>` : null}</td>
              <td>v${n.from} → v${n.to}</td>
              <td><span class=${`badge status-${n.status}`}>${n.status}</span>${n.reason ? html`<div class="reason">${n.reason}</div>` : null}</td>
              <td>${activationText(n.activation) || '—'}</td>
              <td>${localTime(n.last_contact)}</td>
            </tr>`,
          )}
        </tbody>
      </table>`)
    }
    ${
      loaded.state === 'done' &&
      html`<nav class="pager" aria-label="Pages of nodes">
        ${cursors.length > 0 ? html`<button type="button" onClick=${() => setCursors(cursors.slice(0, -1))}>← Previous</button>` : null}
        ${loaded.data.next_cursor ? html`<button type="button" onClick=${() => setCursors([...cursors, loaded.data.next_cursor!])}>Next →</button>` : null}
      </nav>`
    }`;
}

/** Every publish, rollback and retirement, newest first. */
export function PublishesPage({ params }: { params: URLSearchParams }) {
  const cursor = params.get('cursor') ?? '';
  const [loaded] = useApi<PublishList>(`/v1/publishes${query({ limit: 25, cursor })}`);
  return html`<section aria-labelledby="publishes-title">
    <h1 id="publishes-title">Publishes</h1>
    <${Pending} loaded=${loaded} what="the publishes" />
    ${loaded.state === 'done' && loaded.data.items.length === 0 && html`<p class="empty">Nothing was published yet: <code>${HINT.publish}</code> sends a rete.</p>`}
    ${
      loaded.state === 'done' &&
      loaded.data.items.length > 0 &&
      html`<table class="nodes">
        <thead><tr><th scope="col">Publish</th><th scope="col">When</th><th scope="col">By</th><th scope="col">Message</th><th scope="col">Nodes</th></tr></thead>
        <tbody>
          ${loaded.data.items.map(
            (p) => html`<tr>
              <td><a href=${href.publish(p.publish_id)}>${p.publish_id.slice(0, 8)}</a> <span class="muted">${p.kind}</span></td>
              <td>${localTime(p.recorded_at)}</td>
              <td>${p.actor}</td>
              <td>${p.message}</td>
              <td>${p.changed.length}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <nav class="pager" aria-label="Pages">${loaded.data.next_cursor && html`<a href=${`#/publishes?cursor=${loaded.data.next_cursor}`}>Older →</a>`}</nav>`
    }
  </section>`;
}
