import { useEffect, useRef, useState } from 'preact/hooks';
import { HINT } from '../hints.js';
import { aborted, api, ApiError, query } from '../api.js';
import { localTime } from '../format.js';
import { html } from '../html.js';
import { Pending, useFollow } from '../load.js';
import { href } from '../router.js';
import {
  actionsFor,
  badReason,
  currentWave,
  eventText,
  gateText,
  isActive,
  planFacts,
  ROLLOUT_STATUSES,
  rolloutHasPublish,
  rolloutNamedIn,
  segments,
  statusReason,
  waveOfPublish,
} from '../rollout-view.js';
import type { RolloutAction, RolloutList, RolloutTimelineEntry, RolloutView, RolloutWave } from '../types.js';

/** How often a rollout's page asks again while it runs or is paused. */
const FOLLOW_MS = 3000;
/** The list asks less often: it only moves when a wave goes out or a rollout ends. */
const LIST_FOLLOW_MS = 5000;
const PAGE = 50;

/** Rollouts, newest first, filtered by status in the URL; kept current while any listed one is running or paused. */
export function RolloutsPage({ params }: { params: URLSearchParams }) {
  const status = params.get('status') ?? '';
  const asked = Number(params.get('limit'));
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : PAGE;
  const [followed] = useFollow<RolloutList>(`/v1/rollouts${query({ status, limit })}`, LIST_FOLLOW_MS, (l) => l.rollouts.some((r) => isActive(r.status)));
  return html`<section aria-labelledby="rollouts-title">
    <h1 id="rollouts-title">Rollouts</h1>
    <form class="filters" onSubmit=${(e: Event) => e.preventDefault()}>
      <label
        >Status
        <select name="status" value=${status} onChange=${(e: Event) => (location.hash = href.rollouts({ status: (e.target as HTMLSelectElement).value }))}>
          ${['', ...ROLLOUT_STATUSES].map((s) => html`<option value=${s} selected=${s === status}>${s || 'any'}</option>`)}
        </select>
      </label>
    </form>
    <${Pending} loaded=${followed} what="the rollouts" />
    ${followed.state === 'done' && followed.problem && html`<p class="notice" role="alert">Could not refresh the list (${followed.problem.message}); ${followed.following ? 'trying again.' : 'reload the page to try again.'}</p>`}
    ${
      followed.state === 'done' &&
      (followed.data.rollouts.length === 0
        ? html`<p class="empty">${status ? `No rollout is ${status}.` : `No rollout yet: \`${HINT.rolloutWaves}\` releases a publish in waves.`}</p>`
        : html`<table class="nodes rollouts">
            <caption class="visually-hidden">Rollouts, newest first</caption>
            <thead>
              <tr><th scope="col">Rollout</th><th scope="col">Status</th><th scope="col">Waves released</th><th scope="col">Nodes</th><th scope="col">Message</th><th scope="col">By</th><th scope="col">Created</th></tr>
            </thead>
            <tbody>
              ${followed.data.rollouts.map(
                (r) => html`<tr data-rollout=${r.id}>
                  <td><a href=${href.rollout(r.id)}><code>${r.id.slice(0, 8)}</code></a></td>
                  <td><span class=${`badge rollout-${r.status}`}>${r.status}</span>${statusReason(r) ? html`<div class=${badReason(r.status) ? 'reason' : 'muted'}>${statusReason(r)}</div>` : null}</td>
                  <td>
                    <span class="waves-released">${r.released} of ${r.waves}</span>
                    <progress max=${r.waves} value=${r.released} aria-label=${`${r.released} of ${r.waves} waves released`}></progress>
                  </td>
                  <td>${r.nodes}</td>
                  <td>${r.message || html`<span class="muted">(no message)</span>`}</td>
                  <td>${r.actor}</td>
                  <td><time datetime=${r.created_at}>${localTime(r.created_at)}</time></td>
                </tr>`,
              )}
            </tbody>
          </table>
          ${
            followed.data.rollouts.length === limit &&
            (limit < 1000
              ? html`<nav class="pager" aria-label="Pages"><a href=${href.rollouts({ status, limit: String(Math.min(1000, limit * 4)) })}>Show up to ${Math.min(1000, limit * 4)}</a></nav>`
              : html`<p class="muted">The newest 1000; <code>${HINT.rolloutList}</code> and a status filter narrow it.</p>`)
          }`)
    }
  </section>`;
}

/**
 * One rollout: its state, plan, waves (each a stacked bar of what its nodes reported) and timeline,
 * and the operator's actions that apply now. Followed every few seconds while running or paused;
 * an answer like the last one renders nothing again, and the following stops once it is over or
 * the page is left.
 */
export function RolloutPage({ id }: { id: string }) {
  const [followed, replace] = useFollow<RolloutView>(`/v1/rollouts/${encodeURIComponent(id)}`, FOLLOW_MS, (v) => isActive(v.status));
  const short = followed.state === 'done' ? followed.data.id.slice(0, 8) : id.slice(0, 8);
  return html`<section aria-labelledby="rollout-title">
    <p class="crumbs"><a href=${href.rollouts()}>Rollouts</a> / ${short}</p>
    <h1 id="rollout-title">Rollout ${short}</h1>
    <${Pending} loaded=${followed} what="the rollout" />
    ${followed.state === 'done' && html`<${RolloutBody} v=${followed.data} following=${followed.following} problem=${followed.problem} replace=${replace} />`}
  </section>`;
}

function RolloutBody({ v, following, problem, replace }: { v: RolloutView; following: boolean; problem: ApiError | null; replace: (v: RolloutView) => void }) {
  const current = currentWave(v);
  const plan = planFacts(v);
  const gate = gateText(v, Date.now());
  return html`
    <p class="rollout-head">
      <span class=${`badge rollout-${v.status}`} data-testid="rollout-status">${v.status}</span>
      ${statusReason(v) && html` <span class=${badReason(v.status) ? 'reason' : 'muted'} data-testid="rollout-reason">${statusReason(v)}</span>`}
    </p>
    <dl class="facts">
      <dt>Message</dt><dd>${v.message || html`<span class="muted">(no message)</span>`}</dd>
      <dt>By</dt><dd>${v.actor}, <time datetime=${v.created_at}>${localTime(v.created_at)}</time></dd>
      <dt>Publish</dt><dd><a href=${href.publish(v.publish_id)}>${v.publish_id.slice(0, 8)}</a> <span class="muted">(planned the rollout and released its first wave)</span></dd>
      <dt>Nodes</dt><dd>${v.nodes} changed, in ${v.waves} wave(s); ${v.released} of ${v.waves} released</dd>
      <dt>Last change</dt><dd><time datetime=${v.updated_at}>${localTime(v.updated_at)}</time></dd>
    </dl>
    <p class="progress-state" role="status" aria-live="polite" data-testid="rollout-progress">
      ${following ? `${gate ?? ''} Following: refreshes every ${FOLLOW_MS / 1000} s.` : isActive(v.status) ? 'No longer refreshing: reload the page to follow it again.' : `This rollout is ${v.status}; the page no longer refreshes.`}
    </p>
    ${problem && html`<p class="notice" role="alert">Could not refresh the rollout (${problem.message}); ${following ? 'trying again.' : 'reload the page to try again.'}</p>`}
    <${Actions} v=${v} replace=${replace} />
    <h2>Plan</h2>
    <dl class="facts" data-testid="plan">
      <dt>Canary</dt><dd>${plan.canary}</dd>
      <dt>Waves</dt><dd>${plan.waves}</dd>
      <dt>Bake</dt><dd>${plan.bake}</dd>
      <dt>Failure budget</dt><dd>${plan.budget}</dd>
      <dt>Confirmations</dt><dd>${plan.confirm}</dd>
      <dt>On halt</dt><dd>${plan.onHalt}</dd>
    </dl>
    <h2>Waves</h2>
    <table class="nodes waves">
      <caption class="visually-hidden">Waves in release order, with what their nodes reported</caption>
      <thead>
        <tr><th scope="col">Wave</th><th scope="col">Nodes</th><th scope="col">Progress</th><th scope="col">Released</th><th scope="col">Bakes until</th></tr>
      </thead>
      <tbody>
        ${v.wave_list.map((w) => html`<${WaveRow} key=${w.index} w=${w} current=${w.index === current} active=${isActive(v.status)} />`)}
      </tbody>
    </table>
    <h2>Timeline</h2>
    <ol class="timeline" aria-label="What happened to the rollout, oldest first">
      ${v.timeline.map((e) => html`<${EventItem} key=${e.position} e=${e} waves=${v.wave_list} />`)}
    </ol>
  `;
}

function WaveRow({ w, current, active }: { w: RolloutWave; current: boolean; active: boolean }) {
  const segs = segments(w);
  return html`<tr data-wave=${w.index} class=${current ? 'current' : undefined} aria-current=${current ? 'step' : undefined}>
    <th scope="row">${w.name}${current ? html` <span class="badge rollout-current">${active ? 'current' : 'stopped here'}</span>` : null}</th>
    <td>${w.counts.nodes}</td>
    <td>
      <div class="bar wave-bar" role="img" aria-label=${segs.map((s) => s.label).join(', ')}>
        ${segs.map((s) => html`<span class=${`seg seg-${s.kind}`} data-seg=${s.kind} style=${`flex-grow:${s.count}`} title=${s.label}>${s.label}</span>`)}
      </div>
    </td>
    <td>${w.released_at ? html`<time datetime=${w.released_at}>${localTime(w.released_at)}</time>` : html`<span class="muted">not yet</span>`}</td>
    <td>${w.bakes_until ? html`<time datetime=${w.bakes_until}>${localTime(w.bakes_until)}</time>` : '—'}</td>
  </tr>`;
}

function EventItem({ e, waves }: { e: RolloutTimelineEntry; waves: readonly RolloutWave[] }) {
  const bad = e.type === 'rollout_halted' || e.type === 'rollout_aborted';
  return html`<li class="event" data-type=${e.type}>
    <div class="when"><strong>${eventText(e, waves)}</strong> <time datetime=${e.recorded_at}>${localTime(e.recorded_at)}</time></div>
    <div>
      <span class="muted">by</span> <span class="actor">${e.actor}</span>
      ${e.publish_id ? html` <span class="muted">·</span> ${bad ? 'rollback publish' : 'publish'} <a href=${href.publish(e.publish_id)}>${e.publish_id.slice(0, 8)}</a>` : null}
    </div>
    ${e.reason ? html`<div class=${bad ? 'reason' : 'said'}>${e.reason}</div>` : null}
  </li>`;
}

const VERB: Record<RolloutAction, string> = { pause: 'pause', resume: 'resume', promote: 'promote', abort: 'abort' };

/**
 * The actions that apply now, with an optional message recorded with them. Pause and resume share
 * one button, so focus stays on it when one turns into the other. Abort asks first, in the page.
 * A refusal shows the coordinator's own message.
 */
function Actions({ v, replace }: { v: RolloutView; replace: (v: RolloutView) => void }) {
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState<RolloutAction | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [failure, setFailure] = useState<{ action: RolloutAction; error: ApiError } | null>(null);
  const abortButton = useRef<HTMLButtonElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (confirming) confirmButton.current?.focus();
  }, [confirming]);
  const can = actionsFor(v);
  if (can.length === 0) return null;

  const act = async (action: RolloutAction) => {
    setBusy(action);
    setFailure(null);
    try {
      const said = message.trim();
      const next = await api<RolloutView>(`/v1/rollouts/${encodeURIComponent(v.id)}/${action}`, { method: 'POST', body: said ? { message: said } : {} });
      setMessage('');
      replace(next);
    } catch (err) {
      if (!aborted(err)) setFailure({ action, error: err instanceof ApiError ? err : new ApiError(0, 'error', String(err)) });
    } finally {
      setBusy(null);
      setConfirming(false);
    }
  };
  const toggle: RolloutAction = can.includes('pause') ? 'pause' : 'resume';
  // While an action is under way the buttons refuse clicks but stay focusable: a disabled button
  // would drop the keyboard user's focus to the page's start.
  const idle = busy === null ? undefined : 'true';
  const when = (f: () => void) => () => {
    if (busy === null) f();
  };
  const next = v.wave_list[v.released];
  const releasedNodes = v.wave_list.reduce((n, w) => n + w.counts.released, 0);
  return html`<section class="actions" aria-labelledby="actions-title">
    <h2 id="actions-title">Actions</h2>
    <div class="action-row">
      <label class="action-message">Message for the record (optional)
        <input name="message" maxlength="4096" value=${message} onInput=${(e: Event) => setMessage((e.target as HTMLInputElement).value)} />
      </label>
      <button type="button" data-action=${toggle} aria-disabled=${idle} onClick=${when(() => void act(toggle))}>${busy === toggle ? (toggle === 'pause' ? 'Pausing…' : 'Resuming…') : toggle === 'pause' ? 'Pause' : 'Resume'}</button>
      ${
        can.includes('promote') &&
        html`<button type="button" data-action="promote" aria-describedby="promote-hint" aria-disabled=${idle} onClick=${when(() => void act('promote'))}>${busy === 'promote' ? 'Promoting…' : 'Promote'}</button>`
      }
      <button type="button" data-action="abort" ref=${abortButton} aria-disabled=${idle ?? (confirming ? 'true' : undefined)} onClick=${when(() => setConfirming(true))}>Abort…</button>
    </div>
    <p class="muted">
      ${toggle === 'pause' ? 'Pause holds the next wave, whatever its gate says. ' : 'Resume lets the gates release waves again. '}
      ${next ? html`<span id="promote-hint">Promote releases ${next.name} (${next.counts.nodes} node(s)) now, without waiting for its gate. </span>` : null}
      Abort stops the rollout for good and gives the released nodes their previous sets back.
    </p>
    ${
      confirming &&
      html`<div class="confirm" role="group" aria-labelledby="confirm-abort">
      <p id="confirm-abort"><strong>Abort rollout ${v.id.slice(0, 8)}?</strong> No further wave is released, and the ${releasedNodes} released node(s) still at the rollout's version get their previous sets back, as new versions.</p>
      <button type="button" class="danger" data-action="abort-confirm" ref=${confirmButton} aria-disabled=${idle} onClick=${when(() => void act('abort'))}>${busy === 'abort' ? 'Aborting…' : 'Abort the rollout'}</button>
      <button
        type="button"
        aria-disabled=${idle}
        onClick=${when(() => {
          setConfirming(false);
          abortButton.current?.focus();
        })}
      >Cancel</button>
    </div>`
    }
    ${
      failure &&
      html`<div class="error" role="alert" data-testid="action-error">
      <strong>Could not ${VERB[failure.action]} the rollout:</strong> ${failure.error.message} <span class="code">(${failure.error.code})</span>
      ${failure.error.status === 403 ? html`<p>This needs an API token with the publisher role: sign out, and sign in with one.</p>` : failure.error.status === 409 ? html`<p>The rollout changed meanwhile; the page shows it as it is now.</p>` : null}
    </div>`
    }
  </section>`;
}

/**
 * On a publish's page: the rollout it belongs to, when its message names one and that rollout lists
 * this publish (a wave's release, or a halt's rollback). A message is free text, so the name alone
 * proves nothing; nothing is shown unless the rollout confirms it.
 */
export function PublishRollout({ publishId, message }: { publishId: string; message: string }) {
  const named = rolloutNamedIn(message);
  const [found, setFound] = useState<RolloutView | null>(null);
  useEffect(() => {
    setFound(null);
    if (!named) return;
    const ctl = new AbortController();
    void rolloutOf(publishId, named, ctl.signal).then((v) => {
      if (!ctl.signal.aborted) setFound(v);
    });
    return () => ctl.abort();
  }, [publishId, named]);
  if (!found) return null;
  const wave = waveOfPublish(found, publishId);
  return html`<dt>Rollout</dt>
    <dd data-testid="publish-rollout"><a href=${href.rollout(found.id)}>rollout <code>${found.id.slice(0, 8)}</code></a> ${wave ? `(released its ${wave})` : '(rolled back its released nodes)'}</dd>`;
}

/** The rollout with this publish among those whose id starts with `prefix`, or null. */
async function rolloutOf(publishId: string, prefix: string, signal: AbortSignal): Promise<RolloutView | null> {
  try {
    const v = await api<RolloutView>(`/v1/rollouts/${prefix}`, { signal });
    return rolloutHasPublish(v, publishId) ? v : null;
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'ambiguous_rollout') return null;
  }
  // Two rollouts share the first eight characters: read each that does.
  try {
    const { rollouts } = await api<RolloutList>(`/v1/rollouts${query({ limit: 1000 })}`, { signal });
    for (const r of rollouts.filter((x) => x.id.startsWith(prefix)).slice(0, 10)) {
      const v = await api<RolloutView>(`/v1/rollouts/${r.id}`, { signal });
      if (rolloutHasPublish(v, publishId)) return v;
    }
  } catch {
    // No link is better than a wrong one.
  }
  return null;
}
