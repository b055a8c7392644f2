import { useState } from 'preact/hooks';
import { HINT } from '../hints.js';
import { query } from '../api.js';
import { age, localTime } from '../format.js';
import { html } from '../html.js';
import { Pending, useApi } from '../load.js';
import { fleetHash, href } from '../router.js';
import type { NodeList, NodeSummary } from '../types.js';

const PAGE = 50;
/** The lifecycle states and convergence states the API filters on (`state=`). */
const STATES = ['', 'unmanaged', 'enrolled', 'retired', 'converged', 'outstanding', 'failed'];

/**
 * Every node, a page at a time in name order: the API hands back a cursor for the next page, so a
 * fleet of 100,000 nodes is never loaded whole. The filter and search live in the URL.
 */
export function FleetPage({ params }: { params: URLSearchParams }) {
  const q = params.get('q') ?? '';
  const state = params.get('state') ?? '';
  const cursor = params.get('cursor') ?? '';
  // The cursors of the pages before this one, so "previous" needs no request of its own.
  const back = (params.get('back') ?? '').split(',').filter(Boolean);
  const [search, setSearch] = useState(q);
  const [loaded] = useApi<NodeList>(`/v1/nodes${query({ limit: PAGE, cursor, q, state })}`);

  const go = (next: Record<string, string>) => {
    location.hash = fleetHash(location.hash, next);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    go({ q: search.trim(), cursor: '', back: '' });
  };

  return html`
    <section aria-labelledby="fleet-title">
      <h1 id="fleet-title">Fleet</h1>
      <form class="filters" role="search" onSubmit=${submit}>
        <label>Node name contains <input name="q" value=${search} onInput=${(e: Event) => setSearch((e.target as HTMLInputElement).value)} /></label>
        <label
          >State
          <select name="state" value=${state} onChange=${(e: Event) => go({ state: (e.target as HTMLSelectElement).value, cursor: '', back: '' })}>
            ${STATES.map((s) => html`<option value=${s}>${s || 'any'}</option>`)}
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      <${Pending} loaded=${loaded} what="the fleet" />
      ${
        loaded.state === 'done' &&
        html`
        ${
          loaded.data.items.length === 0
            ? html`<p class="empty">${q || state ? 'No node matches this filter. Clear the search or pick another state.' : `No nodes yet. Publish a rete with \`${HINT.publish}\`, then create each node's enrolment token with \`${HINT.enrolmentToken}\`.`}</p>`
            : html`<table class="nodes">
              <caption class="visually-hidden">Nodes, in name order</caption>
              <thead>
                <tr><th scope="col">Node</th><th scope="col">State</th><th scope="col">Convergence</th><th scope="col">Head</th><th scope="col">Applied</th><th scope="col">Agent</th><th scope="col">Last contact</th></tr>
              </thead>
              <tbody>
                ${loaded.data.items.map((n) => html`<${NodeRow} n=${n} />`)}
              </tbody>
            </table>`
        }
        <nav class="pager" aria-label="Pages">
          ${back.length > 0 || cursor ? html`<a href=${href.fleet({ q, state, cursor: back[back.length - 1] ?? '', back: back.slice(0, -1).join(',') })}>← Previous</a>` : null}
          ${loaded.data.next_cursor ? html`<a href=${href.fleet({ q, state, cursor: loaded.data.next_cursor, back: [...back, cursor].join(',') })}>Next →</a>` : null}
        </nav>
      `
      }
    </section>
  `;
}

function NodeRow({ n }: { n: NodeSummary }) {
  const reason = n.convergence === 'failed' ? n.last_error : null;
  return html`<tr data-node=${n.node}>
    <td><a href=${href.node(n.node)}>${n.node}</a></td>
    <td><span class=${`badge state-${n.state}`}>${n.state}</span>${n.ineligible ? html` <span class="badge state-failed" title=${n.failed_briefing.map((l) => `${l.check}: ${l.detail}`).join('\n')}>ineligible</span>` : null}</td>
    <td><span class=${`badge conv-${n.convergence ?? 'none'}`}>${n.convergence ?? '—'}</span>${reason ? html`<div class="reason">${reason}</div>` : null}</td>
    <td>${n.version ?? '—'}</td>
    <td>${n.applied_version ?? '—'}</td>
    <td>${n.agent_version ?? '—'}</td>
    <td title=${localTime(n.last_contact)}>${age(n.last_contact_age_seconds)}</td>
  </tr>`;
}
