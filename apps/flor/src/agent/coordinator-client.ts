import type { Agent } from 'node:https';
import type { AgentIdentity, ReportRequest } from '#contracts';
import { answerError, httpCall } from './http.js';
import { coordinatorAgent, type Transport } from './transport.js';

export type BundleFetch =
  | { readonly status: 304 }
  /** Nothing has been published for this node yet: a normal answer, not a failure. */
  | { readonly status: 'none' }
  | { readonly status: 200; readonly jws: string; readonly etag: string | null };

/** The node-facing calls, with the node's credential. */
export class CoordinatorClient {
  private readonly agent: Agent | undefined;

  /** Throws, before any connection, when the credential may not go to this coordinator (transport.ts). */
  constructor(
    private readonly identity: AgentIdentity,
    private readonly timeoutMs: number,
    transport: Transport,
  ) {
    this.agent = coordinatorAgent(new URL(identity.coordinator), transport, 'node credential');
  }

  private url(path: string): URL {
    return new URL(path, this.identity.coordinator);
  }

  private get auth(): Record<string, string> {
    return { authorization: `Bearer ${this.identity.credential}` };
  }

  async fetchBundle(etag: string | null): Promise<BundleFetch> {
    const headers: Record<string, string> = { ...this.auth, accept: 'application/jose' };
    if (etag) headers['if-none-match'] = etag;
    const a = await httpCall(this.url(`/v1/nodes/${this.identity.node}/bundle`), { headers, timeoutMs: this.timeoutMs, agent: this.agent });
    if (a.status === 304) return { status: 304 };
    if (a.status === 404 && /"code":"unknown_node"/.test(a.body.toString('utf8'))) return { status: 'none' };
    if (a.status !== 200) throw answerError(a, 'fetching the bundle');
    const tag = a.headers.etag;
    return { status: 200, jws: a.body.toString('utf8').trim(), etag: typeof tag === 'string' ? tag : null };
  }

  async report(body: ReportRequest): Promise<void> {
    const a = await httpCall(this.url(`/v1/nodes/${this.identity.node}/reports`), { method: 'POST', headers: this.auth, body, timeoutMs: this.timeoutMs, agent: this.agent });
    if (a.status !== 204 && a.status !== 200) throw answerError(a, 'sending the report');
  }
}
