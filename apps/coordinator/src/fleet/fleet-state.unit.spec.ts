import { convergence, lifecycleState, publishNodeStatus, type NodeFacts } from './fleet-state.js';

const facts = (f: Partial<NodeFacts>): NodeFacts => ({ head: null, liveCredentials: 0, revokedCredentials: 0, pendingToken: false, appliedVersion: null, outcomes: [], ...f });

describe('fleet state', () => {
  describe('lifecycle', () => {
    it('names each state a node can be in', () => {
      expect(lifecycleState(facts({ pendingToken: true }))).toBe('pending');
      expect(lifecycleState(facts({ pendingToken: true, liveCredentials: 1 }))).toBe('enrolled');
      expect(lifecycleState(facts({ revokedCredentials: 2 }))).toBe('revoked');
      expect(lifecycleState(facts({ head: { version: 3, retired: false } }))).toBe('unenrolled');
      expect(lifecycleState(facts({ head: { version: 3, retired: true }, liveCredentials: 1 }))).toBe('retired');
    });

    it('treats a fresh token for a revoked node as pending re-enrolment', () => {
      expect(lifecycleState(facts({ revokedCredentials: 1, pendingToken: true }))).toBe('pending');
    });
  });

  describe('convergence', () => {
    const head = { version: 5, retired: false };

    it('is outstanding for a node that never reported, however long ago it was published', () => {
      expect(convergence(facts({ head }))).toBe('outstanding');
      expect(convergence(facts({ head, appliedVersion: 4 }))).toBe('outstanding');
    });

    it('is converged once the head version is applied', () => {
      expect(convergence(facts({ head, appliedVersion: 5 }))).toBe('converged');
      expect(convergence(facts({ head, outcomes: [{ version: 5, result: 'applied', error: null }] }))).toBe('converged');
    });

    it('is failed only on a reported failure of the head version', () => {
      expect(convergence(facts({ head, appliedVersion: 4, outcomes: [{ version: 5, result: 'failed', error: 'restart failed' }] }))).toBe('failed');
      expect(convergence(facts({ head, appliedVersion: 4, outcomes: [{ version: 4, result: 'failed', error: 'x' }] }))).toBe('outstanding');
    });

    it('has none for a node with nothing published', () => {
      expect(convergence(facts({ pendingToken: true }))).toBeNull();
    });
  });

  describe('publish status per node', () => {
    it('is applied, failed with the reason, superseded or outstanding', () => {
      expect(publishNodeStatus(5, { appliedVersion: 5, outcomes: [{ version: 5, result: 'applied', error: null }] })).toEqual({ status: 'applied', reason: null });
      expect(publishNodeStatus(5, { appliedVersion: 4, outcomes: [{ version: 5, result: 'failed', error: 'exit 3: unit not found' }] })).toEqual({ status: 'failed', reason: 'exit 3: unit not found' });
      expect(publishNodeStatus(5, { appliedVersion: 6, outcomes: [{ version: 6, result: 'applied', error: null }] })).toEqual({ status: 'superseded', reason: null });
      expect(publishNodeStatus(5, { appliedVersion: null, outcomes: [] })).toEqual({ status: 'outstanding', reason: null });
    });

    it('keeps an applied version applied after later versions arrive', () => {
      expect(publishNodeStatus(5, { appliedVersion: 7, outcomes: [{ version: 5, result: 'applied', error: null }, { version: 7, result: 'applied', error: null }] }).status).toBe('applied');
    });

    it('counts a failure fixed by a later applied version as superseded, not failed', () => {
      expect(publishNodeStatus(5, { appliedVersion: 6, outcomes: [{ version: 5, result: 'rejected', error: 'bad digest' }, { version: 6, result: 'applied', error: null }] }).status).toBe('superseded');
    });
  });
});
