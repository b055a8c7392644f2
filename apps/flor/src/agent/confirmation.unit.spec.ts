import type { Provisional } from '#contracts';
import { confirmationView, evolve, provisionalFor, REASON_NOT_CONFIRMED, REASON_NOT_REACHED, verdict, type ConfirmationEvent } from './confirmation.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
/** A provisional version 7 (back to 6) with a 60 s window, from T0, after `events`. */
const given = (events: readonly ConfirmationEvent[], mode: Provisional['mode'] = 'agent') => events.reduce(evolve, provisionalFor(7, 6, 60, mode, at(0)));
const activated = (s: number, hasChecks = true): ConfirmationEvent => ({ type: 'activated', at: at(s), hasChecks });

describe('commit-confirmed on the node (pure)', () => {
  it('given a new version, then its deadline is its window after now and nothing is counted yet', () => {
    expect(provisionalFor(7, 6, 60, 'agent', at(0))).toMatchObject({
      version: 7,
      previous: 6,
      deadline: at(60).toISOString(),
      activated_at: null,
      reached_at: null,
    });
  });

  it('given activation, checks passed and a contact, then it is confirmed, at the last of them', () => {
    const p = given([activated(1), { type: 'checks_passed', at: at(2) }, { type: 'coordinator_reached', at: at(3) }]);
    expect(verdict(p, at(4))).toEqual({ kind: 'confirmed', record: { version: 7, at: at(3).toISOString(), mode: 'agent', by: null } });
  });

  it('given no checks declared, when the coordinator is reached after activation, then that alone confirms', () => {
    const p = given([activated(1, false), { type: 'coordinator_reached', at: at(1) }]);
    expect(verdict(p, at(2)).kind).toBe('confirmed');
  });

  it('given a contact before the activation completed, then it does not count', () => {
    const p = given([{ type: 'coordinator_reached', at: at(0) }, activated(1, false)]);
    expect(p.reached_at).toBeNull();
    expect(verdict(p, at(2))).toEqual({ kind: 'waiting', until: at(60), needs: ['contact'] });
  });

  it('given a failing check, when the window closes, then it reverts naming the check and its output', () => {
    const p = given([
      activated(1),
      { type: 'coordinator_reached', at: at(1) },
      { type: 'check_failed', at: at(2), failure: 'health check "web" (tcp 127.0.0.1:9) failed: ECONNREFUSED' },
    ]);
    expect(verdict(p, at(59)).kind).toBe('waiting');
    expect(verdict(p, at(60))).toEqual({ kind: 'revert', reason: 'health check "web" (tcp 127.0.0.1:9) failed: ECONNREFUSED' });
  });

  it('given checks that passed but no contact, when the window closes, then it reverts: coordinator not reached', () => {
    const p = given([activated(1), { type: 'checks_passed', at: at(2) }]);
    expect(verdict(p, at(61))).toEqual({ kind: 'revert', reason: REASON_NOT_REACHED });
  });

  it('given a check that fails and then passes, then the later pass wins and the failure is forgotten', () => {
    const p = given([
      activated(1),
      { type: 'check_failed', at: at(2), failure: 'x' },
      { type: 'checks_passed', at: at(5) },
      { type: 'coordinator_reached', at: at(6) },
    ]);
    expect(p.check_failure).toBeNull();
    expect(verdict(p, at(100)).kind).toBe('confirmed');
  });

  it('given everything happened in time but is judged late (a slow pass, a restart), then it is still confirmed', () => {
    const p = given([activated(1), { type: 'checks_passed', at: at(2) }, { type: 'coordinator_reached', at: at(3) }]);
    expect(verdict(p, at(3600)).kind).toBe('confirmed');
  });

  it('given a contact after the deadline, then it is too late: revert', () => {
    const p = given([activated(1), { type: 'checks_passed', at: at(2) }, { type: 'coordinator_reached', at: at(61) }]);
    expect(verdict(p, at(61))).toEqual({ kind: 'revert', reason: REASON_NOT_REACHED });
  });

  it('given operator mode, when checks and contact are there but no operator, then it waits, and reverts at the deadline', () => {
    const p = given([activated(1), { type: 'checks_passed', at: at(2) }, { type: 'coordinator_reached', at: at(3) }], 'operator');
    expect(verdict(p, at(10))).toEqual({ kind: 'waiting', until: at(60), needs: ['operator'] });
    expect(verdict(p, at(60))).toEqual({ kind: 'revert', reason: REASON_NOT_CONFIRMED });
  });

  it('given operator mode, when the operator confirmed in time, then it is confirmed by them', () => {
    const p = given(
      [activated(1), { type: 'operator_confirmed', at: at(20), by: 'alice' }, { type: 'checks_passed', at: at(2) }, { type: 'coordinator_reached', at: at(3) }],
      'operator',
    );
    expect(verdict(p, at(30))).toEqual({ kind: 'confirmed', record: { version: 7, at: at(20).toISOString(), mode: 'operator', by: 'alice' } });
  });

  it('given operator mode, when the operator confirmed but a check failed, then the checks still apply', () => {
    const p = given(
      [
        activated(1),
        { type: 'operator_confirmed', at: at(5), by: 'alice' },
        { type: 'coordinator_reached', at: at(3) },
        { type: 'check_failed', at: at(4), failure: 'boom' },
      ],
      'operator',
    );
    expect(verdict(p, at(60))).toEqual({ kind: 'revert', reason: 'boom' });
  });

  it('given an activation that never completed, when the window closes, then the reason says so', () => {
    expect(verdict(given([]), at(60))).toEqual({ kind: 'revert', reason: 'version 7 was not activated within the window' });
  });

  it('shows the state a status reader needs: reverting before reverted, a newer confirmation after a revert', () => {
    const reverted = { version: 7, to: 6, reason: 'r', at: at(60).toISOString(), done: false, reported_at: null };
    expect(confirmationView({ provisional: null, confirmed: null, reverted: null })).toBeNull();
    expect(confirmationView({ provisional: null, confirmed: null, reverted })?.state).toBe('reverting');
    expect(confirmationView({ provisional: null, confirmed: null, reverted: { ...reverted, done: true } })?.state).toBe('reverted');
    expect(confirmationView({ provisional: given([]), confirmed: null, reverted: { ...reverted, done: true } })?.state).toBe('provisional');
    expect(
      confirmationView({
        provisional: null,
        confirmed: { version: 9, at: at(0).toISOString(), mode: 'agent', by: null },
        reverted: { ...reverted, done: true },
      })?.state,
    ).toBe('confirmed');
  });
});
