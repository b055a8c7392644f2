import type { FlorJson } from '#contracts';
import { AclTable } from './acl-table.js';
import { classifyChange, isSwappablePath } from './classify-change.js';
import type { ApplyAnswer, ErrorAnswer } from './protocol.schema.js';

/** Everything a vertex runs on, replaced as one value so config, tables and version never disagree. */
export interface RunningConfig {
  readonly version: number | null;
  readonly config: FlorJson;
  readonly acl: AclTable;
  readonly swaps: number;
}

export function initialRunning(config: FlorJson, version: number | null): RunningConfig {
  return Object.freeze({ version, config, acl: AclTable.from(config.acl), swaps: 0 });
}

export interface ApplyDecision {
  readonly answer: ApplyAnswer | ErrorAnswer;
  /** The state to run on next: the same object when nothing is applied. */
  readonly running: RunningConfig;
}

/** Pure: what an `apply` of `next` as `version` does to `running`. The caller swaps in `running`. */
export function decideApply(running: RunningConfig, version: number, next: FlorJson): ApplyDecision {
  const { kind, changed } = classifyChange(running.config, next);
  if (running.version !== null && version < running.version) {
    return {
      running,
      answer: { result: 'error', code: 'stale_version', version, reason: `version ${version} is older than the running version ${running.version}` },
    };
  }
  if (running.version !== null && version === running.version && kind !== 'none') {
    return { running, answer: { result: 'error', code: 'version_conflict', version, reason: `version ${version} is already running with a different config` } };
  }
  switch (kind) {
    case 'none':
      return {
        running: version === running.version ? running : Object.freeze({ ...running, version }),
        answer: { result: 'unchanged', version, running_version: version, changed: [] },
      };
    case 'swappable':
      return {
        running: Object.freeze({ version, config: next, acl: AclTable.from(next.acl), swaps: running.swaps + 1 }),
        answer: { result: 'swapped', version, running_version: version, changed: [...changed] },
      };
    case 'restart':
      return {
        running,
        answer: {
          result: 'restart',
          version,
          running_version: running.version,
          changed: [...changed],
          reason: `changed outside acl: ${changed.filter((p) => !isSwappablePath(p)).join(', ')}`,
        },
      };
    default: {
      const never: never = kind;
      throw new TypeError(`unknown change kind ${String(never)}`);
    }
  }
}
