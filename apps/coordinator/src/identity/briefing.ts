import type { z } from 'zod';
import type { Profile } from '#contracts';

export interface BriefingLine {
  check: string;
  outcome: 'pass' | 'fail';
  detail: string;
}

/** Pure: the checks an enrolment is briefed with; the outcome is computed from its lines. */
export function briefingFor(profile: z.infer<typeof Profile>, now: Date): { outcome: 'pass' | 'fail'; lines: BriefingLine[] } {
  const lines: BriefingLine[] = [
    { check: 'token valid', outcome: 'pass', detail: 'single-use enrolment token accepted' },
    {
      check: 'profile complete',
      outcome: profile.hostname && profile.os && profile.arch && profile.agent_version ? 'pass' : 'fail',
      detail: `hostname=${profile.hostname || '?'} os=${profile.os || '?'} arch=${profile.arch || '?'} agent=${profile.agent_version || '?'}`,
    },
  ];
  const clock = typeof profile.clock === 'string' ? Date.parse(profile.clock) : NaN;
  if (!Number.isNaN(clock)) {
    const skew = Math.abs(clock - now.getTime()) / 1000;
    lines.push({ check: 'clock skew acceptable', outcome: skew <= 300 ? 'pass' : 'fail', detail: `${Math.round(skew)} s from the coordinator's clock` });
  }
  return { outcome: lines.every((l) => l.outcome === 'pass') ? 'pass' : 'fail', lines };
}
