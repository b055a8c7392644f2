import { ARTIFACT_NAME_PATTERN, MAX_ARTIFACTS_PER_NODE, NODE_NAME_PATTERN, SHA256_PATTERN } from './primitives.schema.js';
import { MAX_MESSAGE_LENGTH, type PublishRequest } from './api.schema.js';
import { MAX_NODE_LABELS } from './scope.schema.js';

const TOP_LEVEL = new Set(['message', 'expected_position', 'prune', 'nodes', 'labels']);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * True only for a publish request the PublishRequest schema certainly accepts as it is: the shape
 * retectl sends, with nothing unusual in it. zod's check of a large tree is a large part of a
 * publish, identical ones included, and this costs a small fraction of it (bench/README.md, the
 * publish benchmark). It is deliberately
 * narrower than the schema: anything it is not sure of (an `allow_ineligible` list, a `__proto__`
 * key, a value of another type) answers false, and the caller validates with the schema, which
 * also gives the exact error. A property test holds it to that: whatever it accepts, the schema
 * accepts.
 */
export function isPlainPublishRequest(body: unknown): body is PublishRequest {
  if (!isPlainObject(body)) return false;
  for (const key in body) if (!TOP_LEVEL.has(key)) return false;
  const { message, expected_position: position, prune, nodes } = body;
  if (typeof message !== 'string' || message.length > MAX_MESSAGE_LENGTH) return false;
  if ('expected_position' in body && !(Number.isSafeInteger(position) && (position as number) >= 0)) return false;
  if ('prune' in body && typeof prune !== 'boolean') return false;
  if (!isPlainObject(nodes)) return false;
  for (const node in nodes) {
    if (!NODE_NAME_PATTERN.test(node)) return false;
    const entry = nodes[node];
    if (!isPlainObject(entry)) return false;
    let keys = 0;
    for (const key in entry) if (key !== 'artifacts' || ++keys > 1) return false;
    const artifacts = entry.artifacts;
    if (!isPlainObject(artifacts)) return false;
    let count = 0;
    for (const name in artifacts) {
      if (++count > MAX_ARTIFACTS_PER_NODE || name === 'VERSION' || name === '__proto__' || !ARTIFACT_NAME_PATTERN.test(name)) return false;
      const sha256 = artifacts[name];
      if (typeof sha256 !== 'string' || !SHA256_PATTERN.test(sha256)) return false;
    }
  }
  return !('labels' in body) || plainLabels(body.labels);
}

const plainNames = (v: unknown): boolean =>
  Array.isArray(v) && v.length <= MAX_NODE_LABELS && v.every((n) => typeof n === 'string' && NODE_NAME_PATTERN.test(n));

function plainLabels(labels: unknown): boolean {
  if (!isPlainObject(labels)) return false;
  for (const node in labels) {
    if (!NODE_NAME_PATTERN.test(node)) return false;
    const entry = labels[node];
    if (!isPlainObject(entry)) return false;
    let keys = 0;
    for (const key in entry) if ((key !== 'tags' && key !== 'groups') || ++keys > 2) return false;
    if (!plainNames(entry.tags) || !plainNames(entry.groups)) return false;
  }
  return true;
}
