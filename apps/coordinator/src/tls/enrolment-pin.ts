/** `() => pin | undefined`: the SPKI pin new enrolment tokens carry, when the coordinator serves TLS itself. */
export const ENROLMENT_PIN = Symbol('ENROLMENT_PIN');
export type EnrolmentPin = () => string | undefined;
