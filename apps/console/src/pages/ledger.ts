import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { html } from '../html.js';
import { ErrorBox, Pending, useApi } from '../load.js';
import type { LedgerHead } from '../types.js';

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
    ${head.state === 'done' &&
    html`<dl class="facts">
      <dt>Head position</dt><dd data-testid="head-position">${head.data.position}</dd>
      <dt>Head hash</dt><dd><code>${head.data.hash}</code></dd>
    </dl>`}
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
      ${v &&
      (v.ok
        ? html`<span class="badge status-applied">intact</span> through position ${v.position}${v.mirror ? `; mirror at position ${v.mirror.position}, ${v.mirror.commits} commits${v.mirror.lag ? `, ${v.mirror.lag} behind` : ''}` : ''}`
        : html`<span class="badge status-failed">broken</span> at position ${v.position}: ${v.reason}`)}
    </span>
    ${state.error && html`<${ErrorBox} error=${state.error} what="the verification" />`}
  </div>`;
}
