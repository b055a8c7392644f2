import { createHash } from 'node:crypto';
import type { Agent } from 'node:https';
import { CaFileError, cleartextRefusal, trustAnchors, VerifyingAgent, type VerifyingAgentOptions } from '#tls';
import type { AgentConfig, AgentIdentity } from '#contracts';
import { AgentError } from '../errors.js';

/** How the agent may talk to its coordinator: what it trusts, and whether plain http was accepted. */
export interface Transport {
  /** The CA file trusted (alone); undefined: the system store. */
  readonly caFile?: string;
  /** Where the CA file came from, for messages: "tls.ca_file", "--cacert". */
  readonly caFrom?: string;
  readonly pin?: string;
  /** Enrolment with a pinned token: the pin, and nothing else, admits the server. */
  readonly requirePin?: boolean;
  readonly insecureHttp: boolean;
}

/** The daemon's transport: the config's CA file, else the one enrolment used; the pin from enrolment. */
export function transportFor(identity: AgentIdentity, config: AgentConfig): Transport {
  const caFile = config.tls?.ca_file ?? identity.ca_file;
  return {
    caFile,
    caFrom: config.tls?.ca_file !== undefined ? 'tls.ca_file' : 'the CA file given to enrol (--cacert)',
    pin: identity.tls_pin,
    insecureHttp: config.insecure_http === true || identity.insecure_http === true,
  };
}

/**
 * The agent for requests to the coordinator, or an error before any connection is made: plain http
 * off this machine unless accepted, an unreadable CA file. undefined: plain http, allowed.
 */
export function coordinatorAgent(url: URL, transport: Transport, secret: string): Agent | undefined {
  const refusal = cleartextRefusal(url, secret, 'set insecure_http: true in the agent config (or enrol with --insecure-http)', transport.insecureHttp);
  if (refusal) throw new AgentError('insecure_http', refusal);
  if (url.protocol !== 'https:') return undefined;
  let anchors;
  try {
    anchors = trustAnchors(transport.caFile, transport.caFrom ?? 'the CA file');
  } catch (err) {
    if (err instanceof CaFileError) throw new AgentError('bad_config', err.message);
    throw err;
  }
  const key = createHash('sha256')
    .update(JSON.stringify([url.origin, anchors.source, anchors.ca, transport.pin ?? null, transport.requirePin === true]))
    .digest('base64url');
  if (shared?.key === key) return shared.agent;
  // Another coordinator, CA or pin: the old agent's connections and sessions were judged by the old policy.
  shared?.agent.destroy();
  const agent = new VerifyingAgent({ anchors, pin: transport.pin, requirePin: transport.requirePin }, KEPT_CONNECTION);
  shared = { key, agent };
  return agent;
}

/**
 * How long a connection to the coordinator is kept unused: under the shortest idle timeout of what
 * may stand in front (Node's HTTP server 5 s, deploy/haproxy's http-keep-alive 10 s; the coordinator
 * 72 s), so the agent closes first. It carries a pass's requests (the poll, then the report) and
 * one watch to the next; a poll interval apart, the next connection resumes the TLS session instead.
 */
export const IDLE_TIMEOUT_MS = 4_000;
/** A watch held, a pass's request and `flor agent sync` at once: up to 4 connections. */
export const KEPT_CONNECTION: VerifyingAgentOptions = { keepAlive: true, maxSockets: 4, maxFreeSockets: 4, idleTimeoutMs: IDLE_TIMEOUT_MS };

/**
 * One agent for the process, kept from pass to pass (each pass builds its own client) while the
 * coordinator, the CA certificates and the pin stay the same; changed, it is replaced.
 */
let shared: { readonly key: string; readonly agent: VerifyingAgent } | undefined;

/** The kept agent's handshakes, full and resumed (bench:poll and the tests read them); undefined before any. */
export function coordinatorHandshakes(): { readonly full: number; readonly resumed: number } | undefined {
  return shared ? { ...shared.agent.handshakes } : undefined;
}

/** Closes the kept agent's connections and forgets its sessions (tests, and a process that is done with the coordinator). */
export function dropCoordinatorAgent(): void {
  shared?.agent.destroy();
  shared = undefined;
}
