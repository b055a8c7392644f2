import type { Agent } from 'node:https';
import { TrustChainResponse, type AgentIdentity, type ReportRequest } from '#contracts';
import {
  expandTreeCheckpoint,
  LogProofError,
  TREE_CHECKPOINT_HEADER,
  TREE_CONSISTENCY_HEADER,
  TREE_PROOF_HEADER,
  decodeTreeProof,
  TREE_FRONTIER_HEADER,
  TREE_INCLUSION_HEADER,
  TREE_KEEPS_HEADER,
  TREE_LEAF_HEADER,
  TREE_SIZE_HEADER,
} from '#bundle';
import { AgentError } from '../errors.js';
import { answerError, httpCall } from './http.js';
import { coordinatorAgent, type Transport } from './transport.js';

/**
 * Operator confirmation of the head version (a publish with --confirm-within): its window, and who
 * confirmed it once someone has. Carried on every poll answer, 304 included.
 */
export interface OperatorConfirm {
  readonly version: number;
  readonly within: number;
  readonly by: string | null;
}

/**
 * The tree headers an answer carried, as sent (florete-tree-*; see libs/bundle/src/log-proof.ts):
 * null each when absent. `checkpoint` is the note text.
 */
export interface TreeAnswer {
  readonly checkpoint: string | null;
  readonly consistency: string | null;
  readonly extension: string | null;
  readonly frontier: string | null;
  readonly inclusion: string | null;
  readonly leaf: string | null;
}

export const NO_TREE: TreeAnswer = { checkpoint: null, consistency: null, extension: null, frontier: null, inclusion: null, leaf: null };

/** What the node holds of the tree, as a poll says it: its checkpoint's size (0: none) and whether it keeps that tree's frontier. */
export interface TreeHolding {
  readonly size: number;
  readonly frontier: boolean;
}

/** `checkpoint`: the signed ledger checkpoint the answer carried (the note text), not yet verified; `tree`, its tree proofs. */
export type BundleFetch =
  /** held: the coordinator waited as asked (Preference-Applied), so this 304 ends a watch rather than refusing one. */
  | { readonly status: 304; readonly checkpoint: string | null; readonly confirm: OperatorConfirm | null; readonly held?: boolean; readonly tree: TreeAnswer }
  /** Nothing has been published for this node yet: a normal answer, not a failure. */
  | { readonly status: 'none'; readonly checkpoint: null; readonly confirm: null; readonly tree: TreeAnswer }
  | {
      readonly status: 200;
      readonly jws: string;
      readonly etag: string | null;
      readonly checkpoint: string | null;
      readonly confirm: OperatorConfirm | null;
      readonly tree: TreeAnswer;
    };

const CHECKPOINT_HEADER = 'florete-checkpoint';
export const CONFIRM_HEADER = 'florete-confirm';

/** `version=12; within=600` and, once confirmed, `; by=<actor, URI-encoded>`; null when absent or malformed. */
export function parseConfirmHeader(value: string | string[] | undefined): OperatorConfirm | null {
  if (typeof value !== 'string') return null;
  const fields = new Map(value.split(';').map((f) => f.trim().split('=', 2) as [string, string | undefined]));
  const version = Number(fields.get('version'));
  const within = Number(fields.get('within'));
  if (!Number.isSafeInteger(version) || version < 1 || !Number.isSafeInteger(within) || within < 1) return null;
  const by = fields.get('by');
  let who: string | null = null;
  try {
    who = by === undefined || by === '' ? null : decodeURIComponent(by);
  } catch {
    return null;
  }
  return { version, within, by: who };
}

function checkpointOf(headers: Record<string, string | string[] | undefined>): string | null {
  const v = headers[CHECKPOINT_HEADER];
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : null;
}

function treeOf(headers: Record<string, string | string[] | undefined>): TreeAnswer {
  const one = (name: string): string | null => {
    const v = headers[name];
    return typeof v === 'string' ? v : null;
  };
  const note = one(TREE_CHECKPOINT_HEADER);
  let checkpoint: string | null = null;
  if (note !== null) {
    try {
      // Its short form is rebuilt with the ledger checkpoint of the same answer.
      checkpoint = expandTreeCheckpoint(note, checkpointOf(headers));
    } catch (err) {
      if (!(err instanceof LogProofError)) throw err;
      // Kept as sent: it is no note, and the tree keeper refuses it as malformed.
      checkpoint = note;
    }
  }
  // A node that keeps its frontier gets its proofs in one header.
  const proof = one(TREE_PROOF_HEADER);
  const parts = proof === null ? null : decodeTreeProof(proof);
  return {
    checkpoint,
    consistency: one(TREE_CONSISTENCY_HEADER),
    extension: parts?.extension ?? null,
    frontier: one(TREE_FRONTIER_HEADER),
    inclusion: parts ? parts.inclusion : one(TREE_INCLUSION_HEADER),
    leaf: parts ? parts.leaf : one(TREE_LEAF_HEADER),
  };
}

/** The node-facing calls, with the node's credential. */
export class CoordinatorClient {
  private readonly agent: Agent | undefined;

  /** Throws, before any connection, when the credential may not go to this coordinator (transport.ts). */
  constructor(
    private readonly identity: AgentIdentity,
    private readonly timeoutMs: number,
    transport: Transport,
  ) {
    this.agent = coordinatorAgent(new URL(identity.coordinator), transport, 'node credential');
  }

  private url(path: string): URL {
    return new URL(path, this.identity.coordinator);
  }

  private get auth(): Record<string, string> {
    return { authorization: `Bearer ${this.identity.credential}` };
  }

  /**
   * The bundle, or a 304 for `etag`. With `waitSeconds` (and an ETag) it is a watch: the coordinator
   * holds the request until the bundle changes or the wait, plus its jitter of up to a sixteenth, runs
   * out; the deadline on the exchange grows by as much.
   */
  async fetchBundle(etag: string | null, waitSeconds = 0, signal?: AbortSignal, tree: TreeHolding = { size: 0, frontier: true }): Promise<BundleFetch> {
    const headers: Record<string, string> = { ...this.auth, accept: 'application/jose' };
    if (etag) headers['if-none-match'] = etag;
    // The tree this node holds: the answer's proof starts from it (none held: the empty frontier).
    if (tree.size > 0) headers[TREE_SIZE_HEADER] = String(tree.size);
    headers[TREE_KEEPS_HEADER] = tree.size === 0 || tree.frontier ? 'frontier' : 'root';
    const watching = etag !== null && waitSeconds > 0;
    if (watching) headers.prefer = `wait=${waitSeconds}`;
    const timeoutMs = this.timeoutMs + (watching ? Math.ceil((waitSeconds * 1000 * 17) / 16) : 0);
    const a = await httpCall(this.url(`/v1/nodes/${this.identity.node}/bundle`), { headers, timeoutMs, agent: this.agent, signal });
    const confirm = parseConfirmHeader(a.headers[CONFIRM_HEADER]);
    if (a.status === 304)
      return {
        status: 304,
        checkpoint: checkpointOf(a.headers),
        confirm,
        held: watching && typeof a.headers['preference-applied'] === 'string',
        tree: treeOf(a.headers),
      };
    if (a.status === 404 && /"code":"unknown_node"/.test(a.body.toString('utf8'))) return { status: 'none', checkpoint: null, confirm: null, tree: NO_TREE };
    if (a.status !== 200) throw answerError(a, 'fetching the bundle');
    const tag = a.headers.etag;
    return {
      status: 200,
      jws: a.body.toString('utf8').trim(),
      etag: typeof tag === 'string' ? tag : null,
      checkpoint: checkpointOf(a.headers),
      confirm,
      tree: treeOf(a.headers),
    };
  }

  /** The signed trust versions after `after`; checked by the caller, step by step. */
  async fetchTrust(after: number): Promise<TrustChainResponse> {
    const a = await httpCall(this.url(`/v1/trust?after=${after}`), {
      headers: { accept: 'application/json' },
      timeoutMs: this.timeoutMs,
      maxBytes: 4 * 1024 * 1024,
      agent: this.agent,
    });
    if (a.status !== 200) throw answerError(a, 'fetching the trust chain');
    let parsed;
    try {
      parsed = TrustChainResponse.safeParse(JSON.parse(a.body.toString('utf8')));
    } catch {
      parsed = null;
    }
    if (!parsed?.success) throw new AgentError('bad_response', 'the trust chain answer does not match the contract');
    return parsed.data;
  }

  /**
   * Registers this enrolment's witness key: true once the coordinator has recorded it, false from a
   * coordinator that predates witness keys (no such route); throws on any other answer.
   */
  async registerWitnessKey(publicKey: string): Promise<boolean> {
    const a = await httpCall(this.url(`/v1/nodes/${this.identity.node}/witness-key`), {
      method: 'PUT',
      headers: this.auth,
      body: { public_key: publicKey },
      timeoutMs: this.timeoutMs,
      agent: this.agent,
    });
    if (a.status === 200) return true;
    if (a.status === 404 && /"code":"not_found"/.test(a.body.toString('utf8'))) return false;
    throw answerError(a, 'registering the witness key');
  }

  async report(body: ReportRequest): Promise<void> {
    const a = await httpCall(this.url(`/v1/nodes/${this.identity.node}/reports`), {
      method: 'POST',
      headers: this.auth,
      body,
      timeoutMs: this.timeoutMs,
      agent: this.agent,
    });
    if (a.status !== 204 && a.status !== 200) throw answerError(a, 'sending the report');
  }
}
