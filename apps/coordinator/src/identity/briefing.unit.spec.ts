import { briefingFor, failedLines } from './briefing.js';

const now = new Date('2026-11-29T10:00:00Z');
const profile = { hostname: 'h1', os: 'linux', arch: 'x64', agent_version: '0.1.0', clock: '2026-11-29T10:00:30Z' };
const failed = (b: ReturnType<typeof briefingFor>) => b.lines.filter((l) => l.outcome === 'fail').map((l) => l.check);

describe('enrolment briefing', () => {
  it('passes when every line passes', () => {
    const b = briefingFor({ tokenNode: 'alpha', claimedNode: 'alpha', profile, now });
    expect(b.outcome).toBe('pass');
    expect(b.lines.map((l) => l.check)).toEqual(['token valid', 'node name matches', 'profile complete', 'clock skew acceptable', 'agent version supported']);
  });

  it('fails as a whole when any line fails, naming the lines', () => {
    expect(failed(briefingFor({ tokenNode: 'alpha', claimedNode: 'beta', profile, now }))).toEqual(['node name matches']);
    expect(failed(briefingFor({ tokenNode: 'alpha', profile: { ...profile, clock: '2026-11-29T09:50:00Z' }, now }))).toEqual(['clock skew acceptable']);
    expect(failed(briefingFor({ tokenNode: 'alpha', profile: { ...profile, clock: undefined }, now }))).toEqual(['clock skew acceptable']);
    expect(failed(briefingFor({ tokenNode: 'alpha', profile: { ...profile, agent_version: '0.0.9' }, now }))).toEqual(['agent version supported']);
    expect(failed(briefingFor({ tokenNode: 'alpha', profile: { ...profile, agent_version: 'dev' }, now }))).toEqual(['agent version supported']);
    expect(failed(briefingFor({ tokenNode: 'alpha', profile: { ...profile, arch: '' }, now }))).toEqual(['profile complete']);
    expect(briefingFor({ tokenNode: 'alpha', profile: { ...profile, arch: '' }, now }).outcome).toBe('fail');
  });

  it('accepts newer agents and pre-release suffixes', () => {
    expect(briefingFor({ tokenNode: 'a', profile: { ...profile, agent_version: '1.2.3-rc.1' }, now }).outcome).toBe('pass');
  });

  it('gives the failed lines of a stored briefing, and a line of its own for one it cannot read', () => {
    const stored = JSON.parse(JSON.stringify(briefingFor({ tokenNode: 'alpha', profile: { ...profile, agent_version: 'dev' }, now })));
    expect(failedLines(stored)).toEqual([{ check: 'agent version supported', detail: 'agent version "dev" is not a version number' }]);
    expect(failedLines(null)).toEqual([{ check: 'briefing', detail: 'the enrolment briefing failed' }]);
    expect(failedLines({ outcome: 'fail', lines: 'garbled' })).toEqual([{ check: 'briefing', detail: 'the enrolment briefing failed' }]);
  });
});
