import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLOR_JSON, type VertexControlConfig } from '#contracts';
import { callVertexControl } from '#vertex-control';
import { AgentError } from '../errors.js';
import type { Activated, Activator } from './activator.js';
import { hotReloadVerdict, type HotReloadVerdict } from './hot-reload.verdict.js';
import type { Log } from '#runtime';

/**
 * Hot reload in front of the configured restart: the set's verified flor.json goes
 * to the running vertex's control socket once; `swapped` or `unchanged` means applied, anything else
 * (an answer, a timeout, an error) means the full restart, exactly as without hot reload. The agent
 * passes the file through and reads the answer: deciding what a change takes is the vertex's job.
 * One attempt per activation, no retry: the restart is the retry.
 */
export class HotReloadActivation implements Activator {
  constructor(
    private readonly restart: Activator,
    private readonly control: VertexControlConfig,
    private readonly log: Log,
  ) {}

  resume(setDir: string, version: number): Promise<void> {
    return this.restart.resume(setDir, version);
  }

  async activate(setDir: string, version: number): Promise<Activated> {
    // A local set (version 0) has no version to hand over, and the protocol has no apply without one: restart.
    if (version === 0) return this.restart.activate(setDir, version);
    const verdict = await this.tryHotReload(setDir, version);
    if (verdict.kind === 'applied') {
      this.restart.adopt(setDir, version);
      this.log('info', 'hot reload applied', { version, answer: verdict.answer });
      return { activation: 'hot-reload', answer: verdict.answer };
    }
    this.log('info', 'hot reload not applied: restarting the vertex', { version, code: verdict.code, reason: verdict.reason });
    const fallback = { code: verdict.code, reason: verdict.reason };
    try {
      const done = await this.restart.activate(setDir, version);
      return { ...done, fallback };
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      // The report carries only this message: it says which path failed.
      throw new AgentError(err.code, `hot reload not applied (${verdict.code}: ${verdict.reason}); the full restart failed: ${err.message}`, { cause: err });
    }
  }

  private async tryHotReload(setDir: string, version: number): Promise<HotReloadVerdict> {
    // A supervised vertex that is down (crashed, backing off) has nothing to swap into: start it.
    if (this.restart.vertex()?.pid === null) return { kind: 'restart', code: 'not_running', reason: 'the supervised vertex is not running' };
    let config: unknown;
    try {
      config = JSON.parse(readFileSync(join(setDir, FLOR_JSON), 'utf8'));
    } catch (err) {
      return { kind: 'restart', code: 'no_flor_json', reason: `cannot read the set's ${FLOR_JSON}: ${(err as Error).message}` };
    }
    if (typeof config !== 'object' || config === null || Array.isArray(config)) {
      return { kind: 'restart', code: 'no_flor_json', reason: `the set's ${FLOR_JSON} is not a JSON object` };
    }
    try {
      const answer = await callVertexControl(this.control.socket, { op: 'apply', version, config: config as Record<string, unknown> }, this.control.timeout_ms);
      return hotReloadVerdict({ answer });
    } catch (error) {
      return hotReloadVerdict({ error });
    }
  }

  adopt(setDir: string, version: number): void {
    this.restart.adopt(setDir, version);
  }

  stop(): Promise<void> {
    return this.restart.stop();
  }

  vertex(): { pid: number | null; starts: number } | null {
    return this.restart.vertex();
  }
}
