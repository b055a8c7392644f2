import type { FlorJson } from '#contracts';

export type ChangeKind = 'none' | 'swappable' | 'restart';

export interface ChangeClassification {
  readonly kind: ChangeKind;
  /** Every differing leaf or added/removed entry, e.g. `listen`, `services[0].port`, `acl.ingress.web[1]`; sorted. */
  readonly changed: readonly string[];
}

/**
 * The only subtree a running vertex can take without a restart (see this library's README): the allow lists and
 * the peers they name, which is everything a grant or a revocation changes.
 */
const SWAPPABLE_ROOT = 'acl';

export function isSwappablePath(path: string): boolean {
  return path === SWAPPABLE_ROOT || path.startsWith(`${SWAPPABLE_ROOT}.`);
}

/**
 * Decides what applying `next` over `running` takes. Object key order never matters; list order does
 * (a reordered list counts as changed: that can only turn a swap into a restart, which is always safe).
 */
export function classifyChange(running: FlorJson, next: FlorJson): ChangeClassification {
  const changed: string[] = [];
  diff(running, next, '', changed);
  changed.sort();
  if (changed.length === 0) return { kind: 'none', changed };
  return { kind: changed.every(isSwappablePath) ? 'swappable' : 'restart', changed };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function has(o: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(o, key) && o[key] !== undefined;
}

function diff(a: unknown, b: unknown, path: string, out: string[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= a.length || i >= b.length) out.push(p);
      else diff(a[i], b[i], p, out);
    }
    return;
  }
  if (isObject(a) && isObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const p = path === '' ? key : `${path}.${key}`;
      const inA = has(a, key);
      const inB = has(b, key);
      if (inA !== inB) out.push(p);
      else if (inA) diff(a[key], b[key], p, out);
    }
    return;
  }
  // Leaves (and a leaf turned into a list or object): JSON values, so === is equality.
  if (a !== b) out.push(path === '' ? '$' : path);
}
