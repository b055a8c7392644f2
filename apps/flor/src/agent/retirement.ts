import type { AgentIdentity, AgentState } from '#contracts';

/** What an operator can do with the agent of a retired node: its coordinator has nothing more for it. */
export const WAYS_ON = 'uninstall the agent, or enrol the node again with a new token (flor agent enroll --token …)';

export function retiredMessage(what: string, node: string, version: number | null, answer: string): string {
  return `${what}: node ${node} was retired${version === null ? '' : ` at version ${version}`} (${answer}); it gets nothing more: ${WAYS_ON}`;
}

/** Retired only for the enrolment the coordinator said it to: enrolling again is the way back. */
export function isRetired(state: AgentState, identity: AgentIdentity | null): boolean {
  return state.retired !== null && identity !== null && state.retired.enrolled_at === identity.enrolled_at;
}
