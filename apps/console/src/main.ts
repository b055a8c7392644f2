import { render } from 'preact';
import { HINT } from './hints.js';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, session, whenSignedOut } from './api.js';
import { html } from './html.js';
import { FleetPage } from './pages/fleet.js';
import { LedgerPage } from './pages/ledger.js';
import { KeysPage, PackagesPage, TokensPage } from './pages/admin.js';
import { HelpPage } from './pages/help.js';
import { OverviewPage } from './pages/overview.js';
import { NodePage } from './pages/node.js';
import { PublishesPage, PublishPage } from './pages/publish.js';
import { RolloutPage, RolloutsPage } from './pages/rollout.js';
import { href, useRoute, type Route } from './router.js';
import { Principal } from './principal.js';
import type { LedgerHead } from './types.js';
import './styles.css';

function App() {
  const [signedIn, setSignedIn] = useState(session.token() !== null);
  const [notice, setNotice] = useState<string | null>(null);
  useEffect(
    () =>
      whenSignedOut((reason) => {
        setNotice(reason);
        setSignedIn(false);
      }),
    [],
  );
  if (!signedIn)
    return html`<${SignIn}
      notice=${notice}
      onDone=${() => {
        setNotice(null);
        setSignedIn(true);
      }}
    />`;
  return html`<${Shell}
    onSignOut=${() => {
      session.signOut();
      setNotice('Signed out. The token was forgotten by this tab.');
      setSignedIn(false);
    }}
  />`;
}

/** The token is checked against the API before it is kept, so a typo is caught here and not on every page. */
function SignIn({ notice, onDone }: { notice: string | null; onDone: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return setError(`Paste an API token: \`${HINT.readerToken}\` prints one.`);
    setBusy(true);
    try {
      await api<LedgerHead>('/v1/ledger/head', { token: t });
      session.signIn(t);
      onDone();
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'error', String(err));
      setError(
        e.status === 401
          ? `The coordinator does not know this token (${e.message}). Check it was copied whole, or create a new one with \`${HINT.readerToken}\`.`
          : e.status === 403
            ? `This token may not read the fleet (${e.message}). Node credentials cannot sign in here; use an API token with the reader role or above.`
            : e.message,
      );
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Florete console</h1>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <form onSubmit=${submit}>
      <label for="token">API token (reader is enough)</label>
      <input id="token" name="token" type="password" autocomplete="off" ref=${input} value=${token} onInput=${(e: Event) => setToken((e.target as HTMLInputElement).value)} />
      <button type="submit" disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <p class="muted">The token stays in this tab only and is sent with every request to this coordinator. Closing the tab forgets it.</p>
  </main>`;
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  // A new page moves focus to its content, as a full page load would, so keyboard and screen-reader users land on it.
  useEffect(() => main.current?.focus(), [location.hash]);
  const current = (page: Route['page'][]) => (page.includes(route.page) ? 'page' : undefined);
  return html`
    <a class="skip" href="#main" onClick=${(e: Event) => (e.preventDefault(), main.current?.focus())}>Skip to content</a>
    <header class="top">
      <span class="brand">Florete</span>
      <nav aria-label="Main">
        <a href=${href.overview()} aria-current=${current(['overview'])}>Overview</a>
        <a href=${href.fleet()} aria-current=${current(['fleet', 'node'])}>Fleet</a>
        <a href=${href.publishes()} aria-current=${current(['publishes', 'publish'])}>Publishes</a>
        <a href=${href.rollouts()} aria-current=${current(['rollouts', 'rollout'])}>Rollouts</a>
        <a href=${href.ledger()} aria-current=${current(['ledger'])}>Ledger and audit</a>
        <a href=${href.keys()} aria-current=${current(['keys'])}>Keys</a>
        <a href=${href.packages()} aria-current=${current(['packages'])}>Packages</a>
        <a href=${href.tokens()} aria-current=${current(['tokens'])}>Tokens</a>
        <a href=${href.help()} aria-current=${current(['help'])}>Help</a>
      </nav>
      <${Principal} />
      <button type="button" class="signout" onClick=${onSignOut}>Sign out</button>
    </header>
    <main id="main" tabindex="-1" ref=${main}>${page(route)}</main>
  `;
}

function page(route: Route) {
  switch (route.page) {
    case 'fleet':
      return html`<${FleetPage} params=${route.params} />`;
    case 'node':
      return html`<${NodePage} key=${route.node} node=${route.node} params=${route.params} />`;
    case 'publishes':
      return html`<${PublishesPage} params=${route.params} />`;
    case 'publish':
      return html`<${PublishPage} key=${route.id} id=${route.id} />`;
    case 'rollouts':
      return html`<${RolloutsPage} params=${route.params} />`;
    case 'rollout':
      return html`<${RolloutPage} key=${route.id} id=${route.id} />`;
    case 'ledger':
      return html`<${LedgerPage} />`;
    case 'overview':
      return html`<${OverviewPage} />`;
    case 'tokens':
      return html`<${TokensPage} />`;
    case 'keys':
      return html`<${KeysPage} />`;
    case 'packages':
      return html`<${PackagesPage} />`;
    case 'help':
      return html`<${HelpPage} />`;
    default:
      return html`<p class="empty">There is no page at <code>#${route.path}</code>. <a href=${href.fleet()}>Go to the fleet.</a></p>`;
  }
}

render(html`<${App} />`, document.getElementById('app')!);
