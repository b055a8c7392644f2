import { spkiPin, VerifyingAgent, type TrustPolicy } from '#tls';
import { httpCall } from '../../apps/flor/src/agent/http.js';
import { KEPT_CONNECTION } from '../../apps/flor/src/agent/transport.js';

/**
 * Polls made the way the agent makes them: its own HTTP call (apps/flor/src/agent/http.ts) through a
 * VerifyingAgent that trusts the server by its pinned key, as an agent enrolled with a pinned token
 * does. Each of `loops` loops is one agent with its own connection agent, polling one after the other.
 *
 * - `before`: what the agent did until keep-alive: no kept connection and no session, so every poll is
 *   a TCP connect and a full TLS handshake.
 * - `interval`: the agent now, polling at an interval longer than its idle timeout (4 s; the default
 *   interval is 300 s): the kept connection is closed between polls, and each poll's new connection
 *   resumes the TLS session the previous one was given.
 * - `kept`: the agent now, its requests within the idle timeout (a pass's poll and report, a watch
 *   renewed when it ends): every poll on the one kept connection.
 */
export type AgentMode = 'before' | 'interval' | 'kept';

export interface AgentLoadOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the certificate the server presents: its pin is what the agents trust. */
  readonly certPem: string;
  readonly loops: number;
  readonly mode: AgentMode;
  /** Seconds. */
  readonly duration: number;
}

export interface AgentLoadResult {
  readonly seconds: number;
  readonly polls: number;
  readonly full: number;
  readonly resumed: number;
  /** Answers other than 304. */
  readonly unexpected: number;
  readonly errors: number;
}

export async function measureAgentPolls(opts: AgentLoadOptions): Promise<AgentLoadResult> {
  const url = new URL(opts.url);
  const policy: TrustPolicy = { anchors: { ca: [], source: 'none: the pin alone' }, pin: spkiPin(opts.certPem) };
  const counts = { polls: 0, full: 0, resumed: 0, unexpected: 0, errors: 0 };
  const started = performance.now();
  const deadline = started + opts.duration * 1000;
  const loop = async () => {
    const agent = new VerifyingAgent(policy, opts.mode === 'before' ? { keepAlive: false, maxCachedSessions: 0 } : KEPT_CONNECTION);
    try {
      while (performance.now() < deadline) {
        try {
          const answer = await httpCall(url, { headers: { ...opts.headers }, timeoutMs: 30_000, agent });
          counts.polls++;
          if (answer.status !== 304) counts.unexpected++;
        } catch {
          counts.errors++;
        }
        // The poll interval outlasting the idle timeout: the kept connection closed, the session kept.
        if (opts.mode === 'interval') agent.destroy();
      }
    } finally {
      agent.destroy();
      counts.full += agent.handshakes.full;
      counts.resumed += agent.handshakes.resumed;
    }
  };
  await Promise.all(Array.from({ length: opts.loops }, loop));
  return { seconds: (performance.now() - started) / 1000, ...counts };
}
