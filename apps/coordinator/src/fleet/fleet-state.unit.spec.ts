import { convergence, credentialState, lifecycleState, publishNodeStatus, type NodeFacts } from './fleet-state.js';

const facts = (f: Partial<NodeFacts>): NodeFacts => ({
  head: null,
  liveCredentials: 0,
  revokedCredentials: 0,
  pendingToken: false,
  appliedVersion: null,
  outcomes: [],
  ...f,
});

describe('fleet state', () => {
  describe('lifecycle', () => {
    it('is unmanaged while no agent has enrolled as the node: published, or only given a token', () => {
      expect(lifecycleState(facts({ head: { version: 3, retired: false } }))).toBe('unmanaged');
      expect(lifecycleState(facts({ pendingToken: true }))).toBe('unmanaged');
      expect(lifecycleState(facts({ head: { version: 3, retired: false }, pendingToken: true }))).toBe('unmanaged');
    });

    it('is enrolled for a node that holds or held a credential, whether or not it still works', () => {
      expect(lifecycleState(facts({ liveCredentials: 1 }))).toBe('enrolled');
      expect(lifecycleState(facts({ pendingToken: true, liveCredentials: 1 }))).toBe('enrolled');
      expect(lifecycleState(facts({ revokedCredentials: 2 }))).toBe('enrolled');
      expect(lifecycleState(facts({ revokedCredentials: 1, pendingToken: true }))).toBe('enrolled');
    });

    it('is retired once the final version is published, whatever its credentials', () => {
      expect(lifecycleState(facts({ head: { version: 3, retired: true }, liveCredentials: 1 }))).toBe('retired');
      expect(lifecycleState(facts({ head: { version: 3, retired: true }, revokedCredentials: 1 }))).toBe('retired');
      expect(lifecycleState(facts({ head: { version: 3, retired: true } }))).toBe('retired');
    });

    it("never says disconnected or hosted: those are the agent's own words", () => {
      const all = [
        facts({}),
        facts({ pendingToken: true }),
        facts({ liveCredentials: 1 }),
        facts({ revokedCredentials: 1 }),
        facts({ head: { version: 1, retired: true } }),
      ].map(lifecycleState);
      expect(new Set(all)).toEqual(new Set(['unmanaged', 'enrolled', 'retired']));
    });
  });

  describe('credential', () => {
    it('is none, pending, live or revoked', () => {
      expect(credentialState(facts({}))).toBe('none');
      expect(credentialState(facts({ head: { version: 3, retired: false } }))).toBe('none');
      expect(credentialState(facts({ pendingToken: true }))).toBe('pending');
      expect(credentialState(facts({ liveCredentials: 1, revokedCredentials: 3 }))).toBe('live');
      expect(credentialState(facts({ revokedCredentials: 1 }))).toBe('revoked');
    });

    it('is live over a token out, and pending over revoked: a fresh token is the way back', () => {
      expect(credentialState(facts({ liveCredentials: 1, pendingToken: true }))).toBe('live');
      expect(credentialState(facts({ revokedCredentials: 1, pendingToken: true }))).toBe('pending');
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

    it("is failed for a node that runs a version of the head's number but refused the head's set of it", () => {
      // After a restore that lost this node's version 5, the ledger gave its number to another set.
      const refused = { version: 5, result: 'rejected' as const, error: 'version 5: version_conflict' };
      expect(convergence(facts({ head, appliedVersion: 5, outcomes: [refused] }))).toBe('failed');
      expect(publishNodeStatus(5, { appliedVersion: 5, outcomes: [refused] })).toEqual({ status: 'failed', reason: 'version 5: version_conflict' });
      // Once given that version's set again, it says so, and the outcome is applied.
      expect(convergence(facts({ head, appliedVersion: 5, outcomes: [{ ...refused, result: 'applied' }] }))).toBe('converged');
      // A rejection of a version it never ran is not a conflict: a newer version running converges as before.
      expect(convergence(facts({ head, appliedVersion: 6, outcomes: [refused] }))).toBe('converged');
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
      expect(publishNodeStatus(5, { appliedVersion: 5, outcomes: [{ version: 5, result: 'applied', error: null }] })).toEqual({
        status: 'applied',
        reason: null,
      });
      expect(publishNodeStatus(5, { appliedVersion: 4, outcomes: [{ version: 5, result: 'failed', error: 'exit 3: unit not found' }] })).toEqual({
        status: 'failed',
        reason: 'exit 3: unit not found',
      });
      expect(publishNodeStatus(5, { appliedVersion: 6, outcomes: [{ version: 6, result: 'applied', error: null }] })).toEqual({
        status: 'superseded',
        reason: null,
      });
      expect(publishNodeStatus(5, { appliedVersion: null, outcomes: [] })).toEqual({ status: 'outstanding', reason: null });
      // A revert is a later version the node then runs: that it went back is what the publish shows.
      expect(
        publishNodeStatus(5, {
          appliedVersion: 6,
          outcomes: [
            { version: 5, result: 'reverted', error: 'not confirmed in time' },
            { version: 6, result: 'applied', error: null },
          ],
        }),
      ).toEqual({ status: 'reverted', reason: 'not confirmed in time' });
    });

    it('keeps an applied version applied after later versions arrive', () => {
      expect(
        publishNodeStatus(5, {
          appliedVersion: 7,
          outcomes: [
            { version: 5, result: 'applied', error: null },
            { version: 7, result: 'applied', error: null },
          ],
        }).status,
      ).toBe('applied');
    });

    it('counts a failure fixed by a later applied version as superseded, not failed', () => {
      expect(
        publishNodeStatus(5, {
          appliedVersion: 6,
          outcomes: [
            { version: 5, result: 'rejected', error: 'bad digest' },
            { version: 6, result: 'applied', error: null },
          ],
        }).status,
      ).toBe('superseded');
    });
  });
});
