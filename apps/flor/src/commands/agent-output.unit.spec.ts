import type { AgentStatus, ApplySetOutcome, SyncOutcome } from '#contracts';
import { describeApplySet } from './apply-set.command.js';
import { formatBehind, formatStatus } from './status.command.js';
import { describeOutcome } from './sync.command.js';

const outcome = (o: Partial<SyncOutcome>): SyncOutcome => ({
  result: 'up_to_date',
  dry_run: false,
  version: 7,
  was: 7,
  active_version: 7,
  reason: null,
  code: null,
  ...o,
});

describe('agent output', () => {
  it('says what a dry run would do, never that it applied', () => {
    expect(describeOutcome(outcome({ dry_run: true, result: 'would_apply', version: 8, was: 7 }))).toBe('would apply 8 (active 7)');
    expect(describeOutcome(outcome({ dry_run: true, result: 'would_apply', version: 7, was: 7 }))).toBe(
      'would apply 7 again (active 7, its apply did not complete)',
    );
    expect(describeOutcome(outcome({ dry_run: true, result: 'rejected', version: 8, reason: 'signature does not verify' }))).toBe(
      'rejected 8: signature does not verify',
    );
    expect(describeOutcome(outcome({ dry_run: true }))).toBe('up to date at 7');
    expect(describeOutcome(outcome({ result: 'applied', version: 8, was: 7, active_version: 8 }))).toBe('applied 8 (was 7)');
  });

  it("lists a dry run's resource steps under the version it would apply", () => {
    const planned: SyncOutcome['planned'] = [
      { kind: 'file', path: '/etc/apt/sources.list.d/mesh.list', action: 'write' },
      { kind: 'package', manager: 'apt', name: 'hello', version: '1.1', action: 'install', installed: '1.0' },
      { kind: 'package', manager: 'apt', name: 'curl', version: '7.88', action: 'unchanged', installed: '7.88' },
      { kind: 'package', manager: 'apt', name: 'gone', version: null, action: 'purge', installed: '2' },
      { kind: 'package', manager: 'apt', name: 'pre', version: null, action: 'forget', installed: '3' },
    ];
    expect(describeOutcome(outcome({ dry_run: true, result: 'would_apply', version: 8, was: 7, planned }))).toBe(
      [
        'would apply 8 (active 7)',
        '  write     file /etc/apt/sources.list.d/mesh.list',
        '  install   package hello=1.1 (installed 1.0)',
        '  unchanged package curl=7.88 (installed 7.88)',
        '  purge     package gone (installed 2)',
        '  forget    package pre (installed 3): there before the agent, left installed',
      ].join('\n'),
    );
  });

  it('says whether a node is behind, what it saw and why it is not in effect', () => {
    expect(formatBehind(null)).toBe('no');
    expect(formatBehind({ seen_version: 3, active_version: 2, reason: 'failed', detail: 'vertex exited with 1', seen_at: null })).toBe(
      'version 3 seen, 2 in effect: its apply failed: vertex exited with 1',
    );
    expect(formatBehind({ seen_version: 3, active_version: 2, reason: 'dry_run', detail: null, seen_at: null })).toBe(
      'version 3 seen, 2 in effect: seen by a dry run only (the next pass applies it)',
    );
    expect(formatBehind({ seen_version: null, active_version: 2, reason: 'rejected', detail: 'unknown_key: …', seen_at: null })).toBe(
      'an unverifiable bundle seen, 2 in effect: rejected: unknown_key: …',
    );
  });

  it('says what apply --set did, and that a refusal changed nothing', () => {
    const digest = 'ab'.repeat(32);
    const o = (x: Partial<ApplySetOutcome>): ApplySetOutcome => ({
      result: 'applied',
      source: '/r/first-set',
      node: 'first',
      set_digest: digest,
      activation: 'restart',
      code: null,
      reason: null,
      ...x,
    });
    expect(describeApplySet(o({ resources: [{ kind: 'file', path: '/etc/motd', outcome: 'applied' }] }))).toBe(
      `applied local set ${digest} (node first) from /r/first-set: 1 resource, activation restart`,
    );
    expect(describeApplySet(o({ result: 'unchanged', activation: null }))).toBe(`local set ${digest} (node first) is already in effect: nothing to do`);
    expect(describeApplySet(o({ result: 'refused', node: null, set_digest: null, activation: null, code: 'not_a_set', reason: '/x does not exist' }))).toBe(
      'refused: /x does not exist (nothing was changed)',
    );
    expect(describeApplySet(o({ result: 'failed', activation: null, code: 'unsupported_resource', reason: 'package resources (apt) …' }))).toBe(
      `failed local set ${digest} (node first): package resources (apt) …`,
    );
  });

  it('shows a local set in effect in place of a coordinator version', () => {
    const status: AgentStatus = {
      lifecycle: 'hosted',
      since: null,
      node: null,
      coordinator: null,
      active_version: 0,
      staged_versions: [],
      high_water: 0,
      applied_version: 0,
      last_poll: null,
      last_contact: null,
      next_poll: null,
      last_result: 'applied',
      last_error: null,
      vertex: null,
      activations: [],
      retired: null,
      behind: null,
      trust_version: null,
      freshness: null,
      confirmation: null,
      watch: null,
      local_set: { node: 'first', set_digest: 'cd'.repeat(32), source: '/r/first-set', applied_at: '2026-12-01T09:00:00.000Z' },
    };
    const text = formatStatus(status);
    expect(text).toMatch(/^active version   0 \(local set\)$/m);
    expect(text).toMatch(/^watch +-$/m);
    expect(formatStatus({ ...status, watch: { state: 'watching', since: '2026-12-01T09:00:00.000Z', reason: null } })).toMatch(
      /^watch +watching since 2026-12-01T09:00:00.000Z$/m,
    );
    expect(formatStatus({ ...status, watch: { state: 'off', since: null, reason: null } })).toMatch(/^watch +off \(sync.watch: false\): polling only$/m);
    expect(text).toMatch(new RegExp(`^applied version  local set ${'cd'.repeat(32)}$`, 'm'));
    expect(text).toMatch(/^local set        node first, from \/r\/first-set, applied at 2026-12-01T09:00:00\.000Z$/m);
    expect(formatStatus({ ...status, local_set: null })).not.toMatch(/local set/);
    // A coordinator's version switched to and not yet in effect: active is that version, not the local set.
    expect(formatStatus({ ...status, active_version: 1 })).toMatch(/^active version   1$/m);
  });
});
