import { z } from 'zod';
import { FlorAcl, NodeName, Version } from '#contracts';

/**
 * The vertex control socket (README.md in this lib): newline-delimited JSON, one request per line,
 * exactly one answer line per request, in order, on the same connection.
 */

/** A request line longer than this (bytes before the newline) is answered `line_too_long` and the connection closed. */
export const MAX_REQUEST_LINE = 4 * 1024 * 1024;

/**
 * `config` is checked against FlorJson after the envelope, so a bad config gets its own code and
 * the answer can still name the version it was for.
 */
export const ApplyRequest = z.strictObject({
  op: z.literal('apply'),
  version: Version,
  config: z.record(z.string(), z.unknown()),
});
export type ApplyRequest = z.infer<typeof ApplyRequest>;

export const StatusRequest = z.strictObject({ op: z.literal('status') });
export type StatusRequest = z.infer<typeof StatusRequest>;

export const VertexControlRequest = z.discriminatedUnion('op', [ApplyRequest, StatusRequest]);
export type VertexControlRequest = z.infer<typeof VertexControlRequest>;

/**
 * swapped: only the acl section changed (allow lists, the peers they name) and the new tables are
 * live. unchanged: same config (the running version still moves to `version`). restart: something
 * else changed; nothing was applied.
 */
export const ApplyAnswer = z.strictObject({
  result: z.enum(['swapped', 'unchanged', 'restart']),
  version: Version,
  /** The version the vertex runs after this request. */
  running_version: Version.nullable(),
  changed: z.array(z.string()),
  reason: z.string().optional(),
});
export type ApplyAnswer = z.infer<typeof ApplyAnswer>;

export const VertexControlErrorAnswerCode = z.enum([
  'bad_json',
  'bad_request',
  'invalid_config',
  'line_too_long',
  'stale_version',
  'version_conflict',
  'internal',
]);
export type VertexControlErrorAnswerCode = z.infer<typeof VertexControlErrorAnswerCode>;

/** Nothing was applied. `version` is there when the request named one. */
export const ErrorAnswer = z.strictObject({
  result: z.literal('error'),
  code: VertexControlErrorAnswerCode,
  reason: z.string(),
  version: Version.optional(),
});
export type ErrorAnswer = z.infer<typeof ErrorAnswer>;

export const StatusAnswer = z.strictObject({
  result: z.literal('status'),
  /** The version of the running config; null when the vertex was started without one and nothing was applied since. */
  version: Version.nullable(),
  pid: z.number().int().positive(),
  node: NodeName,
  mesh: z.string(),
  /** sha256 of the running config in its on-disk form (canonical, pretty): equals the bundle's flor.json sha256. */
  config_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  acl: FlorAcl,
  /** How many allow-list swaps this process has applied. */
  swaps: z.number().int().nonnegative(),
});
export type StatusAnswer = z.infer<typeof StatusAnswer>;

export const VertexControlAnswer = z.union([ApplyAnswer, ErrorAnswer, StatusAnswer]);
export type VertexControlAnswer = z.infer<typeof VertexControlAnswer>;
