import { INITIAL_AGENT_STATE, type AgentIdentity, type AgentState } from '#contracts';
import { AgentError } from '../errors.js';
import { afterPass, agentLifecycle, contactOf, type ContactFields } from './lifecycle.js';

const identity: AgentIdentity = {
  coordinator: 'http://coordinator.test',
  node: 'alpha',
  credential: 'x',
  pinned_jwks: { keys: [{ kty: 'OKP' }] },
  enrolled_at: '2026-01-01T00:00:00.000Z',
};
const state = (s: Partial<AgentState> = {}): AgentState => ({ ...INITIAL_AGENT_STATE, ...s });
const t = (minute: number) => `2026-01-01T01:${String(minute).padStart(2, '0')}:00.000Z`;
const fresh: ContactFields = { last_contact: null, disconnected_since: null, reconnected_at: null };

describe('agent lifecycle', () => {
  describe('what a failed pass says about reaching the coordinator', () => {
    it('is cut off by a network error, a timeout or a 5xx answer', () => {
      expect(contactOf(new AgentError('unreachable', 'ECONNREFUSED'))).toBe('cut_off');
      expect(contactOf(new AgentError('timeout', 'took longer'))).toBe('cut_off');
      expect(contactOf(new AgentError('unavailable', '503', { status: 503 }))).toBe('cut_off');
      expect(contactOf(new AgentError('http_error', '502', { status: 502 }))).toBe('cut_off');
      expect(contactOf(new AgentError('http_error', '500', { status: 500 }))).toBe('cut_off');
    });

    it('is refused when the coordinator answered, whatever it said', () => {
      expect(contactOf(new AgentError('unauthorized', '401', { status: 401 }))).toBe('refused');
      expect(contactOf(new AgentError('node_retired', '401', { status: 401 }))).toBe('refused');
      expect(contactOf(new AgentError('unavailable', '429', { status: 429 }))).toBe('refused');
      expect(contactOf(new AgentError('http_error', '404', { status: 404 }))).toBe('refused');
      expect(contactOf(new AgentError('bad_response', 'too large'))).toBe('refused');
    });
  });

  describe('a run of passes', () => {
    it('starts a disconnection at the first pass cut off and keeps that time through the run', () => {
      const reached = afterPass(fresh, 'reached', t(0));
      expect(reached).toEqual({ last_contact: t(0), disconnected_since: null, reconnected_at: null });
      const cut = afterPass(reached, 'cut_off', t(1));
      expect(cut).toEqual({ last_contact: t(0), disconnected_since: t(1), reconnected_at: null });
      expect(afterPass(afterPass(cut, 'cut_off', t(2)), 'cut_off', t(3))).toEqual(cut);
    });

    it('ends it at the next successful pass, which is when the node is enrolled again', () => {
      const cut = afterPass(afterPass(fresh, 'reached', t(0)), 'cut_off', t(1));
      expect(afterPass(cut, 'reached', t(5))).toEqual({ last_contact: t(5), disconnected_since: null, reconnected_at: t(5) });
      // A pass that reaches it while connected does not move the time it got back.
      expect(afterPass(afterPass(cut, 'reached', t(5)), 'reached', t(6))).toEqual({ last_contact: t(6), disconnected_since: null, reconnected_at: t(5) });
    });

    it('is neither started nor ended by an answer that refused the pass', () => {
      const connected = afterPass(fresh, 'reached', t(0));
      expect(afterPass(connected, 'refused', t(1))).toEqual(connected);
      const cut = afterPass(connected, 'cut_off', t(2));
      expect(afterPass(cut, 'refused', t(3))).toEqual(cut);
    });
  });

  describe('the word and since when', () => {
    it('is hosted without an identity, with no since', () => {
      expect(agentLifecycle(null, state())).toEqual({ lifecycle: 'hosted', since: null });
      expect(agentLifecycle(null, state({ disconnected_since: t(1) }))).toEqual({ lifecycle: 'hosted', since: null });
    });

    it('is enrolled since enrolment, or since it got back to the coordinator after a disconnection', () => {
      expect(agentLifecycle(identity, state())).toEqual({ lifecycle: 'enrolled', since: identity.enrolled_at });
      expect(agentLifecycle(identity, state({ reconnected_at: t(5) }))).toEqual({ lifecycle: 'enrolled', since: t(5) });
      // Enrolling again after that is the newer event.
      expect(agentLifecycle({ ...identity, enrolled_at: t(9) }, state({ reconnected_at: t(5) }))).toEqual({ lifecycle: 'enrolled', since: t(9) });
    });

    it('is disconnected since the first pass of the run that could not reach the coordinator', () => {
      expect(agentLifecycle(identity, state({ last_contact: t(0), disconnected_since: t(1) }))).toEqual({ lifecycle: 'disconnected', since: t(1) });
    });

    it('is retired once the coordinator said so for this enrolment, connected or not', () => {
      const retired = { at: t(3), version: 4, enrolled_at: identity.enrolled_at };
      expect(agentLifecycle(identity, state({ retired }))).toEqual({ lifecycle: 'retired', since: t(3) });
      expect(agentLifecycle(identity, state({ retired, disconnected_since: t(4) }))).toEqual({ lifecycle: 'retired', since: t(3) });
      // Said to an earlier enrolment: moot.
      expect(agentLifecycle({ ...identity, enrolled_at: t(9) }, state({ retired }))).toEqual({ lifecycle: 'enrolled', since: t(9) });
    });
  });
});
