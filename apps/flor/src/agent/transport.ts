import type { Agent } from 'node:https';
import { CaFileError, cleartextRefusal, trustAnchors, VerifyingAgent } from '#tls';
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
  // No keep-alive: a pass makes two requests a poll interval apart; an idle TLS socket is not worth keeping.
  return new VerifyingAgent({ anchors, pin: transport.pin, requirePin: transport.requirePin }, { keepAlive: false });
}
