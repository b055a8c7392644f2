import { HINT } from '../hints.js';
import { html } from '../html.js';
import { href } from '../router.js';

/** One view of the console: where it is, what it shows, and the retectl command that shows the same. */
interface View {
  readonly name: string;
  readonly link: string;
  readonly shows: string;
  readonly cli: string;
}

const VIEWS: readonly View[] = [
  {
    name: 'Overview',
    link: href.overview(),
    shows:
      'the fleet counted by the coordinator: lifecycle and convergence, agent versions, how long ago nodes were last heard from, and the nodes needing attention first (failed, ineligible, stale checkpoint, behind)',
    cli: HINT.failedNodes,
  },
  {
    name: 'Fleet',
    link: href.fleet(),
    shows: 'every node with its state, head and applied version and last contact, filtered and paged',
    cli: HINT.staleNodes,
  },
  {
    name: 'Publishes',
    link: href.publishes(),
    shows: "each publish; one publish's counts and convergence over time are followed from the server while any node is outstanding, its nodes paged by status",
    cli: HINT.publishStatus,
  },
  {
    name: 'Rollouts',
    link: href.rollouts(),
    shows: 'rollouts in waves, each wave’s progress and bake, and the pause, resume, promote and abort a publisher may use',
    cli: HINT.rolloutList,
  },
  {
    name: 'Ledger and audit',
    link: href.ledger(),
    shows: 'the ledger’s head and signed checkpoint, and the checkpoints the nodes hold',
    cli: HINT.auditWitnesses,
  },
  { name: 'Keys', link: href.keys(), shows: 'the signing keys in use and every trust version', cli: HINT.keysList },
  { name: 'Packages', link: href.packages(), shows: 'the mesh’s own apt repository', cli: HINT.packageList },
  { name: 'Tokens', link: href.tokens(), shows: 'the API tokens, never a secret (an admin token reads them)', cli: HINT.tokenList },
];

/** What each page of the console shows, and the retectl command that shows the same from a terminal. */
export function HelpPage() {
  return html`<section aria-labelledby="help-title">
    <h1 id="help-title">Help</h1>
    <p>The console is read-mostly: it shows what the coordinator knows and changes nothing but a rollout's course. Every page has a retectl command that shows the same.</p>
    <table>
      <thead><tr><th scope="col">Page</th><th scope="col">What it shows</th><th scope="col">From a terminal</th></tr></thead>
      <tbody>
        ${VIEWS.map((v) => html`<tr data-view=${v.name}><th scope="row"><a href=${v.link}>${v.name}</a></th><td>${v.shows}</td><td><code>${v.cli}</code></td></tr>`)}
      </tbody>
    </table>
  </section>`;
}
