import { query } from '../api.js';
import { localTime } from '../format.js';
import { html } from '../html.js';
import { Pending, useApi } from '../load.js';
import { href } from '../router.js';
import type { PublishDetail, PublishList } from '../types.js';
import { activationText } from './node.js';
import { PublishRollout } from './rollout.js';

const STATUSES = ['applied', 'outstanding', 'failed', 'superseded'] as const;

/** What one publish reached. While any node is outstanding it asks again every few seconds, and stops once none is. */
export function PublishPage({ id }: { id: string }) {
  const [loaded] = useApi<PublishDetail>(`/v1/publishes/${encodeURIComponent(id)}`, 2000, (p) => p.counts.outstanding > 0);
  return html`<section aria-labelledby="publish-title">
    <p class="crumbs"><a href=${href.publishes()}>Publishes</a> / ${id.slice(0, 8)}</p>
    <h1 id="publish-title">Publish ${id.slice(0, 8)}</h1>
    <${Pending} loaded=${loaded} what="the publish" />
    ${loaded.state === 'done' && html`<${PublishBody} p=${loaded.data} at=${loaded.at} />`}
  </section>`;
}

function PublishBody({ p, at }: { p: PublishDetail; at: number }) {
  const total = p.nodes.length;
  const converged = p.counts.outstanding === 0;
  const failed = p.nodes.filter((n) => n.status === 'failed');
  return html`
    <dl class="facts">
      <dt>Message</dt><dd>${p.message || html`<span class="muted">(no message)</span>`}</dd>
      <dt>By</dt><dd>${p.actor}, <time datetime=${p.recorded_at}>${localTime(p.recorded_at)}</time></dd>
      <dt>Kind</dt><dd>${p.kind} at ledger position ${p.position}</dd>
      <dt>Nodes</dt><dd>${total} changed, ${p.unchanged} unchanged</dd>
      <${PublishRollout} publishId=${p.publish_id} message=${p.message} />
    </dl>
    <p class="progress-state" role="status" aria-live="polite">
      ${total === 0 ? 'This publish changed no node.' : converged ? `Done: no node is outstanding (${p.counts.applied} applied, ${p.counts.failed} failed, ${p.counts.superseded} superseded).` : `Converging: ${p.counts.outstanding} of ${total} outstanding; refreshing every 2 s (last ${new Date(at).toLocaleTimeString()}).`}
    </p>
    ${
      total > 0 &&
      html`<div class="bar" role="img" aria-label=${STATUSES.map((s) => `${p.counts[s]} ${s}`).join(', ')}>
      ${STATUSES.filter((s) => p.counts[s] > 0).map((s) => html`<span class=${`seg seg-${s}`} style=${`flex-grow:${p.counts[s]}`} title=${`${p.counts[s]} ${s}`}>${p.counts[s]} ${s}</span>`)}
    </div>`
    }
    ${
      failed.length > 0 &&
      html`<h2>Failed</h2>
      <ul class="failed">
        ${failed.map((n) => html`<li><a href=${href.node(n.node)}>${n.node}</a> v${n.to}: <span class="reason">${n.reason ?? 'no reason reported'}</span></li>`)}
      </ul>`
    }
    ${
      total > 0 &&
      html`<h2>Nodes</h2>
      <table class="nodes">
        <thead><tr><th scope="col">Node</th><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Activation</th><th scope="col">Last contact</th></tr></thead>
        <tbody>
          ${p.nodes.map(
            (n) => html`<tr data-node=${n.node}>
              <td><a href=${href.node(n.node, n.from > 0 ? { from: String(n.from), to: String(n.to) } : {})}>${n.node}</a>${n.ineligible ? html` <span class="badge state-failed">ineligible</span>` : null}</td>
              <td>v${n.from} → v${n.to}</td>
              <td><span class=${`badge status-${n.status}`}>${n.status}</span>${n.reason ? html`<div class="reason">${n.reason}</div>` : null}</td>
              <td>${activationText(n.activation) || '—'}</td>
              <td>${localTime(n.last_contact)}</td>
            </tr>`,
          )}
        </tbody>
      </table>`
    }
  `;
}

/** Every publish, rollback and retirement, newest first. */
export function PublishesPage({ params }: { params: URLSearchParams }) {
  const cursor = params.get('cursor') ?? '';
  const [loaded] = useApi<PublishList>(`/v1/publishes${query({ limit: 25, cursor })}`);
  return html`<section aria-labelledby="publishes-title">
    <h1 id="publishes-title">Publishes</h1>
    <${Pending} loaded=${loaded} what="the publishes" />
    ${loaded.state === 'done' && loaded.data.items.length === 0 && html`<p class="empty">Nothing was published yet: <code>retectl publish</code> sends a rete.</p>`}
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
