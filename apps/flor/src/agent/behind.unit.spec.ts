import { behindOf, type BehindFacts } from './behind.js';

const at = '2026-01-01T01:00:00.000Z';
const later = '2026-01-01T02:00:00.000Z';
const facts = (f: Partial<BehindFacts> = {}): BehindFacts => ({ appliedVersion: 2, activeVersion: 2, unapplied: null, retired: null, dryRun: null, ...f });

describe('behind', () => {
  it('is null for a node running the newest version it has seen', () => {
    expect(behindOf(facts())).toBeNull();
    expect(behindOf(facts({ appliedVersion: 0, activeVersion: 0 }))).toBeNull();
  });

  it('names a version whose apply failed, with the error', () => {
    const unapplied = { version: 3, reason: 'failed' as const, detail: 'vertex exited with 1', at };
    expect(behindOf(facts({ activeVersion: 3, unapplied }))).toEqual({
      seen_version: 3,
      active_version: 2,
      reason: 'failed',
      detail: 'vertex exited with 1',
      seen_at: at,
    });
  });

  it('names a rejected bundle, with no version when it could not be trusted to say one', () => {
    expect(behindOf(facts({ unapplied: { version: 3, reason: 'rejected', detail: 'digest_mismatch: artifact flor.json …', at } }))).toEqual({
      seen_version: 3,
      active_version: 2,
      reason: 'rejected',
      detail: 'digest_mismatch: artifact flor.json …',
      seen_at: at,
    });
    expect(behindOf(facts({ unapplied: { version: null, reason: 'rejected', detail: 'unknown_key: …', at } }))).toMatchObject({
      seen_version: null,
      reason: 'rejected',
    });
  });

  it('ignores a record the node has since caught up with', () => {
    expect(behindOf(facts({ appliedVersion: 3, activeVersion: 3, unapplied: { version: 3, reason: 'failed', detail: 'x', at } }))).toBeNull();
  });

  it('names a set switched to whose activation has not completed', () => {
    expect(behindOf(facts({ activeVersion: 3 }))).toEqual({ seen_version: 3, active_version: 2, reason: 'pending', detail: expect.any(String), seen_at: null });
  });

  it('names what only a dry run saw, unless a real pass already tried that version or a newer one', () => {
    expect(behindOf(facts({ dryRun: { version: 3, at } }))).toEqual({ seen_version: 3, active_version: 2, reason: 'dry_run', detail: null, seen_at: at });
    expect(behindOf(facts({ dryRun: { version: 2, at } }))).toBeNull();
    const failed = { version: 3, reason: 'failed' as const, detail: 'x', at };
    expect(behindOf(facts({ activeVersion: 3, unapplied: failed, dryRun: { version: 3, at: later } }))).toMatchObject({ reason: 'failed' });
    expect(behindOf(facts({ activeVersion: 3, unapplied: failed, dryRun: { version: 4, at: later } }))).toMatchObject({ seen_version: 4, reason: 'dry_run' });
    // A verified version seen by a dry run after an untrusted rejection is the better news.
    expect(behindOf(facts({ unapplied: { version: null, reason: 'rejected', detail: 'x', at }, dryRun: { version: 3, at: later } }))).toMatchObject({
      seen_version: 3,
      reason: 'dry_run',
    });
  });

  it('names a final version the coordinator retired the node at before it was applied here', () => {
    expect(behindOf(facts({ retired: { version: 4, at } }))).toEqual({
      seen_version: 4,
      active_version: 2,
      reason: 'retired',
      detail: expect.any(String),
      seen_at: at,
    });
    expect(behindOf(facts({ appliedVersion: 4, activeVersion: 4, retired: { version: 4, at } }))).toBeNull();
    expect(behindOf(facts({ retired: { version: null, at } }))).toBeNull();
  });
});
