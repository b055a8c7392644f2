import { useState } from 'preact/hooks';
import { HINT } from '../hints.js';
import { api, ApiError } from '../api.js';
import { html } from '../html.js';
import { ErrorBox, Pending, useApi } from '../load.js';
import { localTime, shortHash } from '../format.js';
import type { CheckpointResponse, LedgerHead, WitnessesResponse } from '../types.js';

interface Verdict {
  ok: boolean;
  position: number;
  hash?: string;
  reason?: string;
  mirror?: { head?: string; position?: number; commits?: number; lag?: number; commit?: string; expected_commit?: string | null };
}

/** The ledger's head, its verification on demand (with and without the git mirror), and how to clone the mirror. */
export function LedgerPage() {
  const [head] = useApi<LedgerHead>('/v1/ledger/head');
  return html`<section aria-labelledby="ledger-title">
    <h1 id="ledger-title">Ledger and audit</h1>
    <${Pending} loaded=${head} what="the ledger head" />
    ${
      head.state === 'done' &&
      html`<dl class="facts">
      <dt>Head position</dt><dd data-testid="head-position">${head.data.position}</dd>
      <dt>Head hash</dt><dd><code>${head.data.hash}</code></dd>
    </dl>`
    }
    <${Checkpoint} />
    <${Witnesses} />
    <h2>Verify</h2>
    <p>Recomputes the hash chain from the first event; with the mirror, also checks that every git commit holds what its publish stamped.</p>
    <${VerifyButton} mirror=${false} label="Verify the chain" />
    <${VerifyButton} mirror=${true} label="Verify the chain and the mirror" />
    <h2>Clone the audit mirror</h2>
    <p>Every publish is a commit. Any reader token is the password:</p>
    <pre><code>git clone ${`${location.origin.replace('://', '://reader:<token>@')}/audit.git`}</code></pre>
  </section>`;
}

function VerifyButton({ mirror, label }: { mirror: boolean; label: string }) {
  const [state, setState] = useState<{ busy: boolean; verdict?: Verdict; error?: ApiError }>({ busy: false });
  const run = async () => {
    setState({ busy: true });
    try {
      setState({ busy: false, verdict: await api<Verdict>(`/v1/ledger/verify${mirror ? '?mirror=true' : ''}`, { method: 'POST' }) });
    } catch (err) {
      setState({ busy: false, error: err instanceof ApiError ? err : new ApiError(0, 'error', String(err)) });
    }
  };
  const v = state.verdict;
  return html`<div class="verify">
    <button type="button" onClick=${run} disabled=${state.busy}>${state.busy ? 'Verifying…' : label}</button>
    <span role="status" aria-live="polite">
      ${
        v &&
        (v.ok
          ? html`<span class="badge status-applied">intact</span> through position ${v.position}${v.mirror ? `; mirror at position ${v.mirror.position}, ${v.mirror.commits} commits${v.mirror.lag ? `, ${v.mirror.lag} behind` : ''}` : ''}`
          : html`<span class="badge status-failed">broken</span> at position ${v.position}: ${v.reason}`)
      }
    </span>
    ${state.error && html`<${ErrorBox} error=${state.error} what="the verification" />`}
  </div>`;
}

/** The newest signed checkpoint, as an auditor would keep it. */
function Checkpoint() {
  const [loaded] = useApi<CheckpointResponse>('/v1/ledger/checkpoint');
  return html`<h2>Latest checkpoint</h2>
    <${Pending} loaded=${loaded} what="the latest checkpoint" />
    ${
      loaded.state === 'done' &&
      html`<p>Position ${loaded.data.position}, signed <time datetime=${loaded.data.time}>${localTime(loaded.data.time)}</time> with trust version ${loaded.data.trust_version}. Keep a copy where the coordinator's administrators cannot write (<code>${HINT.auditCheckpoint}</code> prints it); <code>${HINT.auditVerify}</code> proves it against the ledger and the mirror later.</p>
      <pre data-testid="checkpoint"><code>${loaded.data.note}</code></pre>`
    }`;
}

/**
 * What the fleet holds: each node's newest verified checkpoint against the ledger's hash today at
 * that position. A node holding a hash the ledger no longer has, or two nodes with two hashes for one
 * position, means the ledger was rewritten (retectl audit witnesses also checks the signatures).
 */
function Witnesses() {
  const [loaded] = useApi<WitnessesResponse>('/v1/ledger/witnesses?limit=100');
  if (loaded.state !== 'done') return html`<h2>The fleet's checkpoints</h2><${Pending} loaded=${loaded} what="the fleet's checkpoints" />`;
  const items = loaded.data.items;
  const hashesAt = new Map<number, Set<string>>();
  for (const w of items) if (w.position !== null && w.hash !== null) hashesAt.set(w.position, (hashesAt.get(w.position) ?? new Set()).add(w.hash));
  const verdict = (w: WitnessesResponse['items'][number]) =>
    w.problem
      ? `unreadable: ${w.problem}`
      : w.position !== null && (hashesAt.get(w.position)?.size ?? 0) > 1
        ? 'FORK'
        : w.ledger_hash === w.hash
          ? 'agrees'
          : 'LEDGER DISAGREES';
  return html`<h2>The fleet's checkpoints</h2>
    ${
      items.length === 0
        ? html`<p class="empty">No agent has reported a checkpoint yet. Agents send the newest one they verified with each report.</p>`
        : html`<table class="nodes" data-testid="witnesses">
          <thead><tr><th scope="col">Node</th><th scope="col">Position</th><th scope="col">Hash</th><th scope="col">Signed</th><th scope="col">With the ledger</th></tr></thead>
          <tbody>
            ${items.map((w) => {
              const v = verdict(w);
              return html`<tr data-node=${w.node}><td>${w.node}</td><td>${w.position ?? '—'}</td><td><code>${shortHash(w.hash)}</code></td><td>${localTime(w.time)}</td><td><span class=${`badge ${v === 'agrees' ? 'status-applied' : 'status-failed'}`}>${v}</span></td></tr>`;
            })}
          </tbody>
        </table>
        ${loaded.data.next_after && html`<p class="muted">The first 100 nodes; <code>${HINT.auditWitnesses}</code> checks them all.</p>`}`
    }`;
}
