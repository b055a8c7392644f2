import { z } from 'zod';
import { DNS_LABEL, ROLES } from './plain.js';

/** A node name is a DNS label (RFC 1123): 1-63 of [a-z0-9-], not starting or ending with '-'. */
export const NODE_NAME_PATTERN = DNS_LABEL;

export const NodeName = z.string().regex(NODE_NAME_PATTERN, 'must be a DNS label: 1-63 lowercase letters, digits or "-", not starting or ending with "-"');
export type NodeName = z.infer<typeof NodeName>;

export const SHA256_PATTERN = /^[0-9a-f]{64}$/;
export const Sha256 = z.string().regex(SHA256_PATTERN, 'must be a lowercase hex sha256');

/** Artifact file names are plain file names: no folders, no dot-files, nothing a path could escape with. */
export const ARTIFACT_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
export const ArtifactName = z
  .string()
  .regex(ARTIFACT_NAME_PATTERN, 'must be a plain file name of letters, digits, "_", "-" and "."')
  .refine((s) => s !== 'VERSION', 'VERSION is reserved');
/** A publish carries at most this many artifacts per node. */
export const MAX_ARTIFACTS_PER_NODE = 256;

/** Versions are int4 in the database; positions are int8 but must stay exact in JSON numbers. */
export const MAX_VERSION = 2_147_483_647;
export const Version = z.number().int().positive().max(MAX_VERSION);
export const Position = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A version in a URL path: plain decimal digits, nothing Number() would also accept (0x10, 1e3, ' 7'). */
export const VersionParam = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be a version number')
  .transform(Number)
  .pipe(Version);
export const Timestamp = z.string().describe('RFC 3339 UTC');
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;
