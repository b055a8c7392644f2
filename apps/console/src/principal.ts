import { useApi } from './load.js';
import { html } from './html.js';
import type { WhoamiResponse } from './types.js';

/** What the token in use may do, in a line. */
export function principalText(w: Pick<WhoamiResponse, 'name' | 'role'> & { readonly scope?: readonly string[] | null }): string {
  return `${w.name} · ${w.role} · ${w.scope ? `only ${w.scope.join(', ')}` : 'every node'}`;
}

/** The header's line about the token in use: its name, role and scope. Nothing while it loads or if it cannot. */
export function Principal() {
  const [loaded] = useApi<WhoamiResponse>('/v1/whoami');
  if (loaded.state !== 'done') return null;
  const title = loaded.data.scope ? 'This token sees and may change only the nodes its scope selects' : 'This token is held to no scope';
  return html`<span class="principal" data-testid="principal" title=${title}>${principalText(loaded.data)}</span>`;
}
