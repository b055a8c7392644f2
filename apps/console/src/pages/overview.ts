import { age } from '../format.js';
import { Bars, Columns, type Bar } from '../charts.js';
import { HINT } from '../hints.js';
import { html } from '../html.js';
import { Pending, useFollow } from '../load.js';
import { href } from '../router.js';
import type { FleetOverview } from '../types.js';

/** The overview is counts only, whatever the fleet's size; it is asked again this often while open. */
const FOLLOW_MS = 10_000;

const REASON_TEXT: Record<FleetOverview['attention'][number]['reasons'][number], string> = {
  failed: 'failed',
  ineligible: 'ineligible',
  stale_checkpoint: 'stale checkpoint',
  behind: 'behind',
};

/**
 * The fleet at a glance, counted by the coordinator (GET /v1/fleet/overview): lifecycle and
 * convergence, the agent versions in use, how long ago nodes were last heard from, and the nodes
 * that need someone, most urgent first.
 */
export function OverviewPage() {
  const [followed] = useFollow<FleetOverview>('/v1/fleet/overview', FOLLOW_MS, () => true);
  return html`<section aria-labelledby="overview-title">
    <h1 id="overview-title">Overview</h1>
    <p class="muted">
      Counted by the coordinator, so this page costs the same for 10 nodes or 100,000; asked again every ${FOLLOW_MS / 1000} s. <em>Behind</em>: enrolled, in contact, not running its head. <em>Stale checkpoint</em>: its agent says the newest ledger checkpoint it verified is older than it allows.
    </p>
    <${Pending} loaded=${followed} what="the fleet overview" />
    ${followed.state === 'done' && html`<${OverviewBody} o=${followed.data} />`}
  </section>`;
}

function OverviewBody({ o }: { o: FleetOverview }) {
  if (o.total === 0)
    return html`<p class="empty">No nodes yet. Publish a rete with <code>${HINT.publish}</code>, then create each node's enrolment token with <code>${HINT.enrolmentToken}</code>.</p>`;
  const lifecycle: Bar[] = [
    { label: 'enrolled', value: o.lifecycle.enrolled, tone: 'fill-ok' },
    { label: 'unmanaged', value: o.lifecycle.unmanaged, tone: 'fill-warn' },
    { label: 'retired', value: o.lifecycle.retired, tone: 'fill-grey' },
  ];
  const convergence: Bar[] = [
    { label: 'converged', value: o.convergence.converged, tone: 'fill-ok' },
    { label: 'outstanding', value: o.convergence.outstanding, tone: 'fill-warn' },
    { label: 'failed', value: o.convergence.failed, tone: 'fill-bad' },
    { label: 'never published', value: o.convergence.unpublished, tone: 'fill-grey' },
  ];
  const versions: Bar[] = o.agent_versions.slice(0, 8).map((v) => ({ label: v.version ?? 'unknown', value: v.nodes }));
  const ages: Bar[] = [...o.contact_age.map((b) => ({ label: b.label, value: b.nodes })), { label: 'never', value: o.never_contacted, tone: 'fill-grey' }];
  return html`
    <p class="lead"><strong>${o.total.toLocaleString('en')}</strong> nodes; <a href=${href.fleet()}>list them all</a>.</p>
    <div class="cards">
      <div class="card">
        <h2>Lifecycle</h2>
        <${Bars} bars=${lifecycle} title="Nodes by lifecycle" />
      </div>
      <div class="card">
        <h2>Convergence</h2>
        <${Bars} bars=${convergence} title="Nodes by convergence" />
        <p class="muted"><a href=${href.fleet({ state: 'failed' })}>Failed nodes</a> · <a href=${href.fleet({ state: 'outstanding' })}>outstanding nodes</a></p>
      </div>
      <div class="card">
        <h2>Agent versions</h2>
        ${versions.length === 0 ? html`<p class="muted">No agent has enrolled yet.</p>` : html`<${Bars} bars=${versions} title="Enrolled nodes by agent version" />`}
        ${o.agent_versions.length > 8 ? html`<p class="muted">and ${o.agent_versions.length - 8} more versions</p>` : null}
      </div>
      <div class="card">
        <h2>Last contact</h2>
        <${Columns} bars=${ages} title="Nodes by age of their last contact" />
        <p class="muted">Nodes silent longer than an hour: <code>${HINT.staleNodes}</code></p>
      </div>
    </div>
    <h2 id="attention-title">Needs attention</h2>
    ${
      o.attention_total === 0
        ? html`<p class="empty">Nothing needs attention: no node failed, is ineligible, reports a stale checkpoint, or is behind.</p>`
        : html`<p>
            ${o.attention_counts.failed} failed, ${o.attention_counts.ineligible} ineligible, ${o.attention_counts.stale_checkpoint} with a stale checkpoint, ${o.attention_counts.behind} behind${o.attention_total > o.attention.length ? html`; the first ${o.attention.length} of ${o.attention_total} shown, most urgent first` : ''}.
          </p>
          <table class="nodes" aria-labelledby="attention-title">
            <thead><tr><th scope="col">Node</th><th scope="col">Why</th><th scope="col">Head</th><th scope="col">Applied</th><th scope="col">Last contact</th></tr></thead>
            <tbody>
              ${o.attention.map(
                (a) => html`<tr data-node=${a.node}>
                  <td><a href=${href.node(a.node)}>${a.node}</a></td>
                  <td>${a.reasons.map((r) => html`<span class=${`badge why-${r}`}>${REASON_TEXT[r]}</span> `)}${a.last_error ? html`<div class="reason">${a.last_error}</div>` : null}</td>
                  <td>${a.version ?? '—'}</td>
                  <td>${a.applied_version ?? '—'}</td>
                  <td>${age(a.last_contact_age_seconds)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  `;
}
