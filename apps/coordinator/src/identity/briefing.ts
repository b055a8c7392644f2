import type { z } from 'zod';
import type { Briefing, BriefingLine, Profile } from '#contracts';

export type { Briefing, BriefingLine };

/** The oldest agent whose bundle handling this coordinator supports. */
export const MIN_AGENT_VERSION = '0.1.0';
export const MAX_CLOCK_SKEW_SECONDS = 300;

/**
 * Pure: the checks an enrolment is briefed with. Adoption always completes; the outcome is computed
 * from the lines, and a failed line makes the node ineligible: shown in its status and publishes, and
 * refused new content until it enrols cleanly or a publish accepts it by name.
 */
export function briefingFor(input: { tokenNode: string; claimedNode?: string; profile: z.infer<typeof Profile>; now: Date }): Briefing {
  const { profile, now } = input;
  const line = (check: string, ok: boolean, detail: string): BriefingLine => ({ check, outcome: ok ? 'pass' : 'fail', detail });
  const missing = (['hostname', 'os', 'arch', 'agent_version'] as const).filter((k) => !profile[k]);
  const clock = typeof profile.clock === 'string' ? Date.parse(profile.clock) : Number.NaN;
  const skew = Math.abs(clock - now.getTime()) / 1000;
  const version = parseVersion(profile.agent_version);
  const lines = [
    line('token valid', true, `single-use enrolment token for ${input.tokenNode} accepted`),
    input.claimedNode === undefined
      ? line('node name matches', true, `agent takes the token's node name ${input.tokenNode}`)
      : line('node name matches', input.claimedNode === input.tokenNode, `agent expects ${input.claimedNode}, token is for ${input.tokenNode}`),
    line(
      'profile complete',
      missing.length === 0,
      missing.length === 0 ? `${profile.hostname} ${profile.os}/${profile.arch}` : `missing: ${missing.join(', ')}`,
    ),
    Number.isNaN(clock)
      ? line('clock skew acceptable', false, 'the profile carries no readable clock')
      : line(
          'clock skew acceptable',
          skew <= MAX_CLOCK_SKEW_SECONDS,
          `${Math.round(skew)} s from the coordinator's clock (at most ${MAX_CLOCK_SKEW_SECONDS} s)`,
        ),
    version === null
      ? line('agent version supported', false, `agent version ${JSON.stringify(profile.agent_version)} is not a version number`)
      : line(
          'agent version supported',
          compare(version, parseVersion(MIN_AGENT_VERSION)!) >= 0,
          `agent ${profile.agent_version}, at least ${MIN_AGENT_VERSION} required`,
        ),
  ];
  return { outcome: lines.every((l) => l.outcome === 'pass') ? 'pass' : 'fail', lines };
}

/**
 * The failed lines of a stored briefing: why its node is ineligible. A node flagged without a
 * readable briefing still gets a line, so a refusal never names a node with no reason.
 */
export function failedLines(briefing: unknown): { check: string; detail: string }[] {
  const lines = (briefing as { lines?: unknown } | null)?.lines;
  const failed = Array.isArray(lines) ? lines.filter(isFailedLine).map((l) => ({ check: l.check, detail: l.detail })) : [];
  return failed.length > 0 ? failed : [{ check: 'briefing', detail: 'the enrolment briefing failed' }];
}

function isFailedLine(l: unknown): l is BriefingLine {
  const line = l as Partial<BriefingLine> | null;
  return typeof line?.check === 'string' && typeof line.detail === 'string' && line.outcome === 'fail';
}

function parseVersion(v: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function compare(a: [number, number, number], b: [number, number, number]): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}
