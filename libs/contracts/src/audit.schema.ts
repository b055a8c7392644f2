import { z } from 'zod';
import { NodeName, Position, Sha256, Timestamp } from './primitives.schema.js';

/** A signed checkpoint as served: the C2SP note exactly as signed, and what it says. */
export const CheckpointView = z.object({
  note: z.string(),
  origin: z.string(),
  position: Position,
  hash: Sha256,
  time: Timestamp,
  trust_version: z.number().int().positive(),
});
export type CheckpointView = z.infer<typeof CheckpointView>;

/** `GET /v1/ledger/checkpoint`: the latest checkpoint the coordinator signed. */
export const CheckpointResponse = CheckpointView;
export type CheckpointResponse = z.infer<typeof CheckpointResponse>;

export const WitnessesQuery = z.strictObject({
  after: NodeName.optional().describe("only nodes whose name sorts after this one (the previous page's next_after)"),
  limit: z
    .string()
    .regex(/^[0-9]{1,4}$/, 'must be a number from 1 to 1000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .default(500),
});

export const CosignedCheckpointQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^[0-9]{1,5}$/, 'must be a number from 1 to 10000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(10_000))
    .default(100)
    .describe('at most this many cosignatures, by node name'),
});
export type CosignedCheckpointQuery = z.infer<typeof CosignedCheckpointQuery>;

/**
 * One node's witness: the checkpoint its agent last reported holding (the note as reported, so
 * anyone can check its signature), and the ledger's hash today at that checkpoint's position
 * (null when the ledger is shorter). `problem` says why a reported note could not be read.
 */
export const Witness = z.object({
  node: NodeName,
  note: z.string(),
  origin: z.string().nullable(),
  position: Position.nullable(),
  hash: Sha256.nullable(),
  time: Timestamp.nullable(),
  reported_at: Timestamp.nullable(),
  stale_since: Timestamp.nullable(),
  ledger_hash: Sha256.nullable(),
  problem: z.string().optional(),
  /**
   * The node's witness key as the ledger recorded it (the raw Ed25519 public key, base64, and the
   * ledger position of the event that did), and the newest tree checkpoint it cosigned with its
   * cosignature line. `valid` is the coordinator's own check of the line against that key; an
   * auditor checks it again against the key the ledger holds. Absent from an agent without a key.
   */
  witness_key: z.object({ public_key: z.string(), position: z.number().int().nullable() }).nullable().optional(),
  cosigned: z.object({ note: z.string(), cosignature: z.string(), size: z.number().int().nullable(), valid: z.boolean() }).nullable().optional(),
});
export type Witness = z.infer<typeof Witness>;

/** `GET /v1/ledger/witnesses`: nodes that reported a checkpoint, by name; the coordinator's own current checkpoint with its ledger hash. */
export const WitnessesResponse = z.object({
  coordinator: CheckpointView.extend({ ledger_hash: Sha256.nullable() }).nullable(),
  items: z.array(Witness),
  next_after: NodeName.nullable(),
});
export type WitnessesResponse = z.infer<typeof WitnessesResponse>;
