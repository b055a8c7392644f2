import { useEffect, useState } from 'preact/hooks';
import { HINT } from '../hints.js';
import { api, ApiError, query } from '../api.js';
import { age, localTime, shortHash } from '../format.js';
import { html } from '../html.js';
import { ErrorBox, Pending, useApi } from '../load.js';
import { href } from '../router.js';
import { sideBySide } from '../side-by-side.js';
import type { DiffResponse, NodeDetail, ReportActivation, VersionEntry, VersionPage } from '../types.js';

/**
 * One node: what it is now, its versions as a timeline (who, when, why, from which publish, and
 * how the agent activated it), and any two versions side by side. `?from=&to=` in the URL opens
 * the diff, so a diff can be linked.
 */
export function NodePage({ node, params }: { node: string; params: URLSearchParams }) {
  const [detail] = useApi<NodeDetail>(`/v1/nodes/${encodeURIComponent(node)}`);
  const versions = useVersions(node);
  const from = params.get('from');
  const to = params.get('to');
  return html`
    <section aria-labelledby="node-title">
      <p class="crumbs"><a href=${href.fleet()}>Fleet</a> / ${node}</p>
      <h1 id="node-title">${node}</h1>
      <${Pending} loaded=${detail} what=${`node ${node}`} />
      ${detail.state === 'done' && html`<${Summary} n=${detail.data} />`}
      ${
        detail.state === 'done' &&
        html`
        <h2>Versions</h2>
        ${versions.error && html`<${ErrorBox} error=${versions.error} what="the versions" />`}
        ${versions.items.length === 0 && !versions.loading && !versions.error ? html`<p class="empty">No version was ever published for this node. Publish a rete that declares it: <code>${HINT.publish}</code>.</p>` : null}
        ${versions.items.length > 0 && html`<${DiffPicker} node=${node} items=${versions.items} from=${from} to=${to} />`}
        ${from !== null && to !== null && html`<${Diff} node=${node} from=${Number(from)} to=${Number(to)} />`}
        <ol class="timeline" aria-label="Versions, newest first">
          ${versions.items.map((v) => html`<${VersionItem} node=${node} v=${v} />`)}
        </ol>
        ${versions.next && html`<button type="button" onClick=${versions.more} disabled=${versions.loading}>Older versions</button>`}
      `
      }
    </section>
  `;
}

function Summary({ n }: { n: NodeDetail }) {
  return html`<dl class="facts">
    <dt>State</dt><dd><span class=${`badge state-${n.state}`}>${n.state}</span> (credential ${n.credential})</dd>
    <dt>Convergence</dt><dd><span class=${`badge conv-${n.convergence ?? 'none'}`}>${n.convergence ?? '—'}</span>${n.convergence === 'failed' && n.last_error ? html` ${n.last_error}` : null}</dd>
    <dt>Head version</dt><dd>${n.version ?? '—'}${n.retired ? ' (retired)' : ''}</dd>
    <dt>Applied version</dt><dd>${n.applied_version ?? '—'}</dd>
    <dt>Agent</dt><dd>${n.agent_version ?? '—'}</dd>
    <dt>Last contact</dt><dd>${age(n.last_contact_age_seconds)}${n.last_contact ? ` (${localTime(n.last_contact)})` : ''}</dd>
    ${n.ineligible && html`<dt>Ineligible</dt><dd><ul>${n.failed_briefing.map((l) => html`<li>${l.check}: ${l.detail}</li>`)}</ul></dd>`}
  </dl>`;
}

/** "hot-reload (swapped)", or "restart: hot reload fell back (restart_answer: …)". */
export function activationText(a: ReportActivation | null): string {
  if (!a) return '';
  if (a.fallback) return `${a.path}: hot reload fell back (${a.fallback.code}: ${a.fallback.reason})`;
  return a.answer ? `${a.path} (${a.answer})` : a.path;
}

function VersionItem({ node, v }: { node: string; v: VersionEntry }) {
  const o = v.outcome;
  return html`<li class="version" data-version=${v.version}>
    <div class="when"><strong>v${v.version}</strong> <time datetime=${v.recorded_at}>${localTime(v.recorded_at)}</time></div>
    <div>${v.message || html`<span class="muted">(no message)</span>`} <span class="muted">by ${v.actor}</span>${v.retired ? html` <span class="badge state-retired">retired</span>` : null}</div>
    <div class="muted">
      publish <a href=${href.publish(v.publish_id)}>${v.publish_id.slice(0, 8)}</a> · set ${shortHash(v.set_digest)}
      ${v.version > 1 ? html` · <a href=${href.node(node, { from: String(v.version - 1), to: String(v.version) })}>diff with v${v.version - 1}</a>` : null}
    </div>
    <div class="outcome">
      ${
        o
          ? html`<span class=${`badge result-${o.result}`}>${o.result}</span> ${activationText(o.activation) && html`<span>activation: ${activationText(o.activation)}</span>`} ${o.error && html`<span class="reason">${o.error}</span>`}`
          : html`<span class="muted">not reported by the agent</span>`
      }
    </div>
  </li>`;
}

function DiffPicker({ node, items, from, to }: { node: string; items: VersionEntry[]; from: string | null; to: string | null }) {
  const newest = items[0].version;
  const [a, setA] = useState(from ?? String(Math.max(0, newest - 1)));
  const [b, setB] = useState(to ?? String(newest));
  const options = (selected: string) => [
    html`<option value="0" selected=${selected === '0'}>nothing (v0)</option>`,
    ...items.map((v) => html`<option value=${String(v.version)} selected=${selected === String(v.version)}>v${v.version}</option>`),
  ];
  return html`<form
    class="filters"
    aria-label="Compare two versions"
    onSubmit=${(e: Event) => {
      e.preventDefault();
      location.hash = href.node(node, { from: a, to: b });
    }}
  >
    <label>From <select name="from" onChange=${(e: Event) => setA((e.target as HTMLSelectElement).value)}>${options(a)}</select></label>
    <label>To <select name="to" onChange=${(e: Event) => setB((e.target as HTMLSelectElement).value)}>${options(b)}</select></label>
    <button type="submit">Compare</button>
  </form>`;
}

function Diff({ node, from, to }: { node: string; from: number; to: number }) {
  const [loaded] = useApi<DiffResponse>(`/v1/nodes/${encodeURIComponent(node)}/diff${query({ from, to })}`);
  return html`<section class="diff" aria-labelledby="diff-title">
    <h2 id="diff-title">v${from} → v${to}</h2>
    <${Pending} loaded=${loaded} what="the diff" />
    ${loaded.state === 'done' && loaded.data.changed.length === 0 && html`<p class="empty">v${from} and v${to} carry the same files.</p>`}
    ${
      loaded.state === 'done' &&
      loaded.data.changed.map(
        (c) => html`<article class="artifact" data-artifact=${c.name}>
        <h3>${c.name} <span class=${`badge change-${c.change}`}>${c.change}</span></h3>
        <table class="sbs">
          <caption class="visually-hidden">${c.name}: v${from} on the left, v${to} on the right</caption>
          <colgroup><col class="ln" /><col /><col class="ln" /><col /></colgroup>
          <thead><tr><th scope="col" colspan="2">v${from}</th><th scope="col" colspan="2">v${to}</th></tr></thead>
          <tbody>
            ${sideBySide(c.diff).map((r) =>
              r.kind === 'hunk'
                ? html`<tr class="hunk"><td colspan="4">${r.header}</td></tr>`
                : html`<tr class=${r.kind}>
                    <td class="ln">${r.left?.line ?? ''}</td><td class=${r.kind === 'changed' && r.left ? 'old' : ''}>${r.left?.text ?? ''}</td>
                    <td class="ln">${r.right?.line ?? ''}</td><td class=${r.kind === 'changed' && r.right ? 'new' : ''}>${r.right?.text ?? ''}</td>
                  </tr>`,
            )}
          </tbody>
        </table>
      </article>`,
      )
    }
  </section>`;
}

/** The node's versions, newest first, a page at a time ("older versions" fetches the next). */
function useVersions(node: string) {
  const [items, setItems] = useState<VersionEntry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const load = async (cursor: string | null, reset: boolean) => {
    setLoading(true);
    try {
      const page = await api<VersionPage>(`/v1/nodes/${encodeURIComponent(node)}/versions${query({ limit: 25, cursor })}`);
      setItems((old) => (reset ? page.items : [...old, ...page.items]));
      setNext(page.next_cursor);
      setError(null);
    } catch (err) {
      // A node with a token or credential but no publish yet has no versions: that is the empty state, not an error.
      if (err instanceof ApiError && err.code === 'unknown_node') {
        setItems([]);
        setNext(null);
      } else setError(err instanceof ApiError ? err : new ApiError(0, 'error', String(err)));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load(null, true);
  }, [node]);
  return { items, next, loading, error, more: () => void load(next, false) };
}
