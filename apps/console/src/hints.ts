/**
 * Every retectl command the console suggests, in one place: a test parses each with retectl's own
 * command line (test/console-hints.unit.spec.ts), so a hint that names a command or flag retectl
 * does not have fails the build instead of the operator. Words in capitals are placeholders.
 */
export const HINT = {
  readerToken: 'retectl token create --role reader --name NAME',
  adminToken: 'retectl token create --role admin --name NAME',
  enrolmentToken: 'retectl token create NODE',
  publish: 'retectl publish',
  publishWait: 'retectl publish --wait',
  publishStatus: 'retectl status --publish ID',
  failedNodes: 'retectl status --state failed',
  staleNodes: 'retectl status --contact-older-than 1h',
  rolloutWaves: 'retectl publish --canary NODES --waves 10,50,100',
  rolloutList: 'retectl rollout list',
  auditCheckpoint: 'retectl audit checkpoint',
  auditVerify: 'retectl audit verify --checkpoint FILE',
  auditWitnesses: 'retectl audit witnesses',
  tokenList: 'retectl token list',
  tokenRevoke: 'retectl token revoke NAME',
  keysList: 'retectl keys list',
  keysRotate: 'retectl keys rotate',
  packageList: 'retectl package list',
  packagePush: 'retectl package push FILE',
  rollback: 'retectl rollback NODE --to 3',
} as const;
