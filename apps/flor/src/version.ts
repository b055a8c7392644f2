/** Sent in the enrolment profile; bump with the package version. */
export const AGENT_VERSION = '0.1.0';
