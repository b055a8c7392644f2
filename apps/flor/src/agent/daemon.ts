import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Server } from 'node:net';
import type { AgentConfig, AgentStatus, ControlRequest, ControlResponse } from '#contracts';
import { createActivator, type Activator } from './activator.js';
import { serveControlSocket } from './control-socket.js';
import { HotReloadActivation } from './hot-reload.activator.js';
import type { Log } from './log.js';
import { backoffDelay, nextPollDelay, timingFrom, type PollTiming } from './schedule.js';
import { StateDir } from './state-dir.js';
import { SyncPass, type PassOutcome } from './sync-pass.js';

/**
 * `flor agent run`: a pass at start, then one per poll interval of the active agent.json (re-read
 * after every pass, so a new interval applies without a restart), with splay jitter, and with
 * exponential backoff while the coordinator cannot be reached. Passes never overlap: the periodic
 * one and those asked for on the control socket queue behind each other.
 */
export class Daemon {
  private readonly activator: Activator;
  private readonly syncPass: SyncPass;
  private server: Server | null = null;
  private timer: NodeJS.Timeout | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private failures = 0;
  private nextPollAt: Date | null = null;
  private stopping = false;

  constructor(
    private readonly dir: StateDir,
    private readonly config: AgentConfig,
    private readonly log: Log,
  ) {
    const restart = createActivator(config.activation);
    this.activator = config.vertex_control ? new HotReloadActivation(restart, config.vertex_control, log) : restart;
    this.syncPass = new SyncPass(dir, config, this.activator, log);
  }

  async start(): Promise<void> {
    this.dir.ensure();
    this.dir.sweepLeftovers();
    this.server = await serveControlSocket(this.dir.socketPath, (req) => this.handle(req));
    this.log('info', 'agent started', { state_dir: this.dir.root, socket: this.dir.socketPath, enrolled: this.dir.readIdentity() !== null });
    // A set applied before this start keeps running; a pending one is finished by the first pass.
    const active = this.dir.activeVersion();
    const state = this.dir.readState();
    if (active > 0 && state.applied_version === active) {
      await this.activator.resume(this.dir.setDir(active), active).catch((err: Error) => this.log('error', 'vertex did not start', { reason: err.message }));
    }
    void this.periodic();
  }

  /** Serialises passes; the returned promise settles with this pass's outcome. */
  sync(dryRun: boolean): Promise<PassOutcome> {
    const run = this.queue.then(() => this.syncPass.run(dryRun));
    this.queue = run.catch(() => {});
    return run;
  }

  private async periodic(): Promise<void> {
    if (this.stopping) return;
    const outcome = await this.sync(false).catch((err: Error) => {
      this.log('error', 'sync pass crashed', { reason: err.message, stack: err.stack });
      return null;
    });
    this.schedule(outcome);
  }

  private schedule(outcome: PassOutcome | null): void {
    if (this.stopping) return;
    const timing = this.timing();
    let delay: number;
    if (outcome === null || outcome.contactFailed) {
      this.failures++;
      delay = backoffDelay(timing, this.failures, this.config.max_backoff_seconds * 1000, Math.random(), outcome?.retryAfterMs);
    } else {
      this.failures = 0;
      delay = nextPollDelay(timing, Math.random());
    }
    if (this.timer) clearTimeout(this.timer);
    this.nextPollAt = new Date(Date.now() + delay);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.periodic();
    }, delay);
  }

  private timing(): PollTiming {
    let agentJson: string | null = null;
    try {
      agentJson = readFileSync(join(this.dir.activeLink, 'agent.json'), 'utf8');
    } catch {
      /* no active set, or a set without agent.json */
    }
    return timingFrom(agentJson, this.config.default_poll_interval);
  }

  private async handle(req: ControlRequest): Promise<ControlResponse> {
    switch (req.op) {
      case 'sync': {
        const outcome = await this.sync(req.dry_run);
        // A new agent.json may carry a new interval: count it from this pass.
        if (!req.dry_run) this.schedule(outcome);
        const { contactFailed: _c, retryAfterMs: _r, ...sync } = outcome;
        return { ok: true, sync };
      }
      case 'status':
        return { ok: true, status: this.status() };
      default: {
        const never: never = req;
        throw new TypeError(`unknown request ${JSON.stringify(never)}`);
      }
    }
  }

  status(): AgentStatus {
    const identity = this.dir.readIdentity();
    const state = this.dir.readState();
    const active = this.dir.activeVersion();
    return {
      lifecycle: identity ? 'enrolled' : 'hosted',
      node: identity?.node ?? null,
      coordinator: identity?.coordinator ?? null,
      active_version: active,
      staged_versions: this.dir.stagedVersions(),
      high_water: Math.max(state.high_water, active),
      applied_version: state.applied_version,
      last_poll: state.last_poll,
      last_contact: state.last_contact,
      next_poll: this.nextPollAt?.toISOString() ?? null,
      last_result: state.last_result,
      last_error: state.last_error,
      vertex: this.activator.vertex(),
      activations: state.activations,
    };
  }

  /** SIGTERM: no new passes, let a running one finish, close the socket, stop a supervised vertex. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const closed = new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    await this.queue;
    await this.activator.stop();
    await closed;
    this.log('info', 'agent stopped');
  }
}
