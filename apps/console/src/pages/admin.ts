import { localTime, shortHash } from '../format.js';
import { HINT } from '../hints.js';
import { html } from '../html.js';
import { Pending, useApi } from '../load.js';
import type { ApiTokenList, PackageList, TrustChainResponse } from '../types.js';

/*
 * Read-only views of what the coordinator holds besides the fleet: API tokens, signing keys and
 * trust versions, the package repository. Nothing here changes anything: each page names the
 * retectl command that does.
 */

/** Every API token (admin only): never a secret, only who holds it, its role, scope, state and use. */
export function TokensPage() {
  const [loaded] = useApi<ApiTokenList>('/v1/api-tokens');
  return html`<section aria-labelledby="tokens-title">
    <h1 id="tokens-title">API tokens</h1>
    <p class="muted">Read only. Create one with <code>${HINT.readerToken}</code>, revoke one with <code>${HINT.tokenRevoke}</code>.</p>
    ${
      loaded.state === 'error' && loaded.error.status === 403
        ? html`<p class="notice" role="alert">Only an admin token lists API tokens (${loaded.error.message}). Sign in with one made by <code>${HINT.adminToken}</code>, or ask an admin to run <code>${HINT.tokenList}</code>.</p>`
        : html`<${Pending} loaded=${loaded} what="the API tokens" />`
    }
    ${
      loaded.state === 'done' &&
      html`<table class="nodes">
        <caption class="visually-hidden">API tokens, with role, scope, state and last use</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Scope</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th></tr></thead>
        <tbody>
          ${loaded.data.items.map(
            (t) => html`<tr data-token=${t.name}>
              <td>${t.name} <span class="code">${t.id.slice(0, 8)}</span></td>
              <td>${t.role}</td>
              <td>${t.scope === null ? html`<span class="muted">every node</span>` : t.scope.join(', ')}</td>
              <td><span class=${`badge token-${t.state}`}>${t.state}</span>${t.revoked_by ? html`<div class="muted">by ${t.revoked_by}, ${localTime(t.revoked_at)}</div>` : null}</td>
              <td>${localTime(t.created_at)}<div class="muted">by ${t.created_by}</div></td>
              <td>${t.expires_at ? localTime(t.expires_at) : html`<span class="muted">never</span>`}</td>
              <td>${t.last_used_at ? localTime(t.last_used_at) : html`<span class="muted">never</span>`}</td>
            </tr>`,
          )}
        </tbody>
      </table>`
    }
  </section>`;
}

interface Jwks {
  keys: { kid: string; kty: string; crv?: string; alg?: string }[];
}

interface TrustDocument {
  version: number;
  keys: { kid: string }[];
  revoked: string[];
  issued_at: string;
  previous: string | null;
}

/**
 * A trust version's payload, read from its compact JWS for display. The page does not check the
 * signature: agents do, and `retectl keys list` does.
 */
export function trustPayload(jws: string): TrustDocument | null {
  try {
    const part = jws.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(part + '='.repeat((4 - (part.length % 4)) % 4)), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as TrustDocument;
  } catch {
    return null;
  }
}

/** The keys the coordinator signs with (its JWKS) and every trust version, newest first. */
export function KeysPage() {
  const [jwks] = useApi<Jwks>('/.well-known/jwks.json');
  const [trust] = useApi<TrustChainResponse>('/v1/trust');
  return html`<section aria-labelledby="keys-title">
    <h1 id="keys-title">Signing keys and trust</h1>
    <p class="muted">Read only. <code>${HINT.keysList}</code> verifies the chain; <code>${HINT.keysRotate}</code> makes a new key (admin).</p>
    <h2>Keys in use</h2>
    <${Pending} loaded=${jwks} what="the signing keys" />
    ${
      jwks.state === 'done' &&
      html`<table class="nodes">
        <caption class="visually-hidden">The coordinator's public signing keys</caption>
        <thead><tr><th scope="col">Key id (kid)</th><th scope="col">Type</th></tr></thead>
        <tbody>${jwks.data.keys.map((k) => html`<tr data-kid=${k.kid}><td><code>${k.kid}</code></td><td>${[k.kty, k.crv, k.alg].filter(Boolean).join(' ')}</td></tr>`)}</tbody>
      </table>`
    }
    <h2>Trust versions</h2>
    <${Pending} loaded=${trust} what="the trust versions" />
    ${
      trust.state === 'done' &&
      html`<p>Head: trust version ${trust.data.head}. Each version is signed by a key of the one before it; agents walk forward from the version they pinned.</p>
      <table class="nodes">
        <caption class="visually-hidden">Trust versions, newest first</caption>
        <thead><tr><th scope="col">Version</th><th scope="col">Issued</th><th scope="col">Keys</th><th scope="col">Revoked</th><th scope="col">Previous</th></tr></thead>
        <tbody>
          ${[...trust.data.versions].reverse().map((v) => {
            const d = trustPayload(v.document);
            return html`<tr data-trust-version=${v.version}>
              <td>${v.version}</td>
              <td>${d ? localTime(d.issued_at) : '—'}</td>
              <td>${d ? d.keys.map((k) => html`<code>${shortHash(k.kid)}</code> `) : html`<span class="reason">unreadable</span>`}</td>
              <td>${d && d.revoked.length > 0 ? d.revoked.map((k) => html`<code>${shortHash(k)}</code> `) : '—'}</td>
              <td>${d?.previous ? html`<code>${shortHash(d.previous)}</code>` : '—'}</td>
            </tr>`;
          })}
        </tbody>
      </table>`
    }
  </section>`;
}

/** The mesh's apt repository: every package pushed, in push order, with who pushed it. */
export function PackagesPage() {
  const [loaded] = useApi<PackageList>('/v1/packages');
  return html`<section aria-labelledby="packages-title">
    <h1 id="packages-title">Package repository</h1>
    <p class="muted">Read only. Served to the agents at <code>/repo/debian/</code>; <code>${HINT.packagePush}</code> adds a package (publisher).</p>
    <${Pending} loaded=${loaded} what="the packages" />
    ${
      loaded.state === 'done' &&
      (loaded.data.items.length === 0
        ? html`<p class="empty">No package was pushed yet: <code>${HINT.packagePush}</code> uploads a .deb.</p>`
        : html`<table class="nodes">
        <caption class="visually-hidden">Packages in the repository, in push order</caption>
        <thead><tr><th scope="col">Package</th><th scope="col">Version</th><th scope="col">Architecture</th><th scope="col">Size</th><th scope="col">sha256</th><th scope="col">Pushed</th></tr></thead>
        <tbody>
          ${loaded.data.items.map(
            (p) => html`<tr data-package=${p.name}>
              <td>${p.name}</td>
              <td>${p.version}</td>
              <td>${p.architecture}</td>
              <td>${p.size.toLocaleString('en')} B</td>
              <td><code title=${p.sha256}>${shortHash(p.sha256)}</code></td>
              <td>${localTime(p.pushed_at)}<div class="muted">by ${p.actor}, position ${p.position}</div></td>
            </tr>`,
          )}
        </tbody>
      </table>`)
    }
  </section>`;
}
