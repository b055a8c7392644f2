import type { AgentIdentity, AgentLifecycle, AgentState } from '#contracts';
import type { AgentError } from '../errors.js';
import { isRetired } from './retirement.js';

/**
 * What a pass says about reaching the coordinator: `reached` (it got the bundle, a 304 or "nothing
 * published"), `cut_off` (nothing answered for it: a network error, a timeout, a 5xx from it or from
 * a proxy in front of it) or `refused` (it answered, and said no: 401, 429, another 4xx, an answer
 * that breaks the contract).
 */
export type Contact = 'reached' | 'cut_off' | 'refused';

export function contactOf(err: AgentError): Contact {
  // A server the node does not trust is not its coordinator: as far as the node knows, it is cut off.
  if (err.code === 'unreachable' || err.code === 'timeout' || err.code === 'tls_untrusted' || err.code === 'tls_pin_mismatch') return 'cut_off';
  if (err.status !== null && err.status >= 500) return 'cut_off';
  return 'refused';
}

export type ContactFields = Pick<AgentState, 'last_contact' | 'disconnected_since' | 'reconnected_at'>;

/**
 * The contact fields after a pass stamped `at`. A disconnection starts at the first pass cut off and
 * lasts until one reaches the coordinator; a refusal neither starts nor ends it, because the
 * coordinator answering is not a successful pass and not a lost one either.
 */
export function afterPass(fields: ContactFields, contact: Contact, at: string): ContactFields {
  const { last_contact, disconnected_since, reconnected_at } = fields;
  switch (contact) {
    case 'reached':
      return { last_contact: at, disconnected_since: null, reconnected_at: disconnected_since !== null ? at : reconnected_at };
    case 'cut_off':
      return { last_contact, disconnected_since: disconnected_since ?? at, reconnected_at };
    case 'refused':
      return { last_contact, disconnected_since, reconnected_at };
    default: {
      const never: never = contact;
      throw new TypeError(`unknown contact ${String(never)}`);
    }
  }
}

/**
 * The agent's own lifecycle word and since when (lifecycle.schema.ts). Retired outranks a
 * disconnection: a retired node has nothing more to fetch, whether or not it can reach the
 * coordinator.
 */
export function agentLifecycle(identity: AgentIdentity | null, state: AgentState): { lifecycle: AgentLifecycle; since: string | null } {
  if (!identity) return { lifecycle: 'hosted', since: null };
  if (isRetired(state, identity)) return { lifecycle: 'retired', since: state.retired!.at };
  if (state.disconnected_since !== null) return { lifecycle: 'disconnected', since: state.disconnected_since };
  const back = state.reconnected_at;
  return { lifecycle: 'enrolled', since: back !== null && Date.parse(back) > Date.parse(identity.enrolled_at) ? back : identity.enrolled_at };
}
