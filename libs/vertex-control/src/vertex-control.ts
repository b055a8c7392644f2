import { createHash } from 'node:crypto';
import { FlorJson, Version } from '#contracts';
import { canonicalPretty } from '#bundle';
import type { AclTable } from './acl-table.js';
import { decideApply, initialRunning, type RunningConfig } from './apply.decider.js';
import { VertexControlError } from './errors.js';
import { LineSocketError, serveLineSocket, type LineServer } from '#runtime';
import {
  MAX_REQUEST_LINE,
  VertexControlRequest,
  type ErrorAnswer,
  type StatusAnswer,
  type VertexControlAnswer,
  type VertexControlErrorAnswerCode,
} from './protocol.schema.js';

export type VertexControlLog = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface VertexControlOptions {
  /** The config the vertex started with, already parsed. */
  readonly config: FlorJson;
  /** Its version when known (the agent passes FLORETE_SET_VERSION), else null. */
  readonly version: number | null;
  readonly log?: VertexControlLog;
  readonly maxLine?: number;
}

const MAX_REASON = 2000;
const MAX_CONNECTIONS = 64;

function issues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const text = error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}…` : text;
}

function errorAnswer(code: VertexControlErrorAnswerCode, reason: string, version?: number): ErrorAnswer {
  return version === undefined ? { result: 'error', code, reason } : { result: 'error', code, reason, version };
}

/**
 * The vertex side of hot reload. Holds the running config and its ACL tables as one immutable value
 * behind one reference: `acl` is read once per new connection, and an accepted `apply` replaces the
 * whole value in a single assignment after the new tables are fully built, so a connection never sees
 * half of one config and half of another.
 */
export class VertexControl {
  #running: RunningConfig;
  #server: LineServer | null = null;
  readonly #log: VertexControlLog;
  readonly #maxLine: number;

  constructor(options: VertexControlOptions) {
    this.#running = initialRunning(options.config, options.version);
    this.#log = options.log ?? (() => {});
    this.#maxLine = options.maxLine ?? MAX_REQUEST_LINE;
  }

  get running(): RunningConfig {
    return this.#running;
  }

  /** The allow lists new connections are checked against right now. */
  get acl(): AclTable {
    return this.#running.acl;
  }

  status(): StatusAnswer {
    const { version, config, swaps } = this.#running;
    return {
      result: 'status',
      version,
      pid: process.pid,
      node: config.node,
      mesh: config.mesh,
      config_sha256: createHash('sha256').update(canonicalPretty(config)).digest('hex'),
      acl: config.acl,
      swaps,
    };
  }

  /** One request line in, its answer out. Never throws: every failure is an `error` answer. */
  handleLine(line: string): VertexControlAnswer {
    try {
      return this.#handle(line);
    } catch (err) {
      this.#log('error', 'control request failed', { reason: err instanceof Error ? err.message : String(err) });
      return errorAnswer('internal', 'the vertex failed to handle the request');
    }
  }

  #handle(line: string): VertexControlAnswer {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      return errorAnswer('bad_json', `not a JSON line: ${(err as Error).message}`);
    }
    const req = VertexControlRequest.safeParse(json);
    if (!req.success) {
      const version = Version.safeParse((json as { version?: unknown } | null)?.version);
      return errorAnswer('bad_request', issues(req.error), version.success ? version.data : undefined);
    }
    if (req.data.op === 'status') return this.status();
    const { version } = req.data;
    const config = FlorJson.safeParse(req.data.config);
    if (!config.success) {
      this.#log('warn', 'apply refused: invalid config', { version });
      return errorAnswer('invalid_config', issues(config.error), version);
    }
    const decision = decideApply(this.#running, version, config.data);
    // The swap: decideApply built the new tables completely; this single assignment publishes them.
    this.#running = decision.running;
    const { answer } = decision;
    if (answer.result === 'error') this.#log('warn', 'apply refused', { version, code: answer.code, reason: answer.reason });
    else this.#log('info', `apply: ${answer.result}`, { version, running_version: answer.running_version, changed: answer.changed });
    return answer;
  }

  /**
   * Serves the protocol on a unix socket, mode 0600 from the moment it exists. A socket file left by
   * a dead process is replaced; a live one, or a path that is not a socket, is an error.
   */
  async listen(path: string): Promise<void> {
    if (this.#server) throw new TypeError('VertexControl is already listening');
    try {
      this.#server = await serveLineSocket(path, {
        maxLine: this.#maxLine,
        maxConnections: MAX_CONNECTIONS,
        onLine: (line) => this.handleLine(line),
        onTooLong: () => errorAnswer('line_too_long', `request lines are limited to ${this.#maxLine} bytes`),
        onError: (err) => this.#log('error', 'control socket error', { reason: err.message }),
      });
    } catch (err) {
      if (!(err instanceof LineSocketError)) throw err;
      const code = err.code === 'socket_in_use' || err.code === 'not_a_socket' ? err.code : 'unreachable';
      throw new VertexControlError(code, err.message, { cause: err.cause ?? err });
    }
  }

  /** Stops serving, drops open control connections and removes the socket file. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    await server?.close();
  }
}
