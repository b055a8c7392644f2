import { spawn, type ChildProcess } from 'node:child_process';
import type { Activation, ActivationRecord } from '#contracts';
import { backoffDelay } from '#runtime';
import { AgentError } from '../errors.js';

const OUTPUT_TAIL = 4096;

/** What an activation did: the path it took, and why it fell back to a restart. */
export type Activated = Omit<ActivationRecord, 'version' | 'at'>;

/** How a new set reaches the vertex. `activate` throws an AgentError('activation_failed') carrying the output. */
export interface Activator {
  /** Called at daemon start with the already-applied active set: a supervised vertex starts, a command does nothing. */
  resume(setDir: string, version: number): Promise<void>;
  activate(setDir: string, version: number): Promise<Activated>;
  /** The running vertex took this set without a restart (hot reload): a later restart after a crash must start it, not the old one. */
  adopt(setDir: string, version: number): void;
  /** For a retired node: nothing may keep running on the old config. */
  stop(): Promise<void>;
  vertex(): { pid: number | null; starts: number } | null;
}

function tail(s: string): string {
  const t = s.length > OUTPUT_TAIL ? `…${s.slice(-OUTPUT_TAIL)}` : s;
  return t.trim();
}

/** A local set (version 0) has no version to give: FLORETE_SET_VERSION is empty, never "0". */
function envFor(setDir: string, version: number): NodeJS.ProcessEnv {
  return { ...process.env, FLORETE_ACTIVE_DIR: setDir, FLORETE_SET_VERSION: version > 0 ? String(version) : '' };
}

class NoActivation implements Activator {
  async resume(): Promise<void> {}
  async activate(): Promise<Activated> {
    return { activation: 'none' };
  }
  adopt(): void {}
  async stop(): Promise<void> {}
  vertex() {
    return null;
  }
}

/** A restart command such as `systemctl restart florete-vertex`, run with /bin/sh. */
class CommandActivation implements Activator {
  constructor(
    private readonly command: string,
    private readonly timeoutMs: number,
  ) {}

  async resume(): Promise<void> {}

  adopt(): void {}

  activate(setDir: string, version: number): Promise<Activated> {
    return new Promise((resolve, reject) => {
      const child = spawn('/bin/sh', ['-c', this.command], { env: envFor(setDir, version), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const collect = (c: Buffer) => {
        out = (out + c.toString('utf8')).slice(-2 * OUTPUT_TAIL);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      const timer = setTimeout(() => child.kill('SIGKILL'), this.timeoutMs);
      child.once('error', (cause) => {
        clearTimeout(timer);
        reject(new AgentError('activation_failed', `restart command could not start: ${cause.message}`, { cause }));
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve({ activation: 'restart' });
        else
          reject(
            new AgentError('activation_failed', `restart command ${signal ? `was killed by ${signal}` : `exited with ${code}`}: ${tail(out) || '(no output)'}`),
          );
      });
    });
  }

  async stop(): Promise<void> {}

  vertex() {
    return null;
  }
}

/**
 * The agent runs the vertex itself: one start per applied version, restarts after a crash with
 * exponential backoff. The vertex's stdin is a pipe from the agent, so it can notice the agent is
 * gone (EOF) even after a kill -9.
 */
class Supervisor implements Activator {
  private child: ChildProcess | null = null;
  private starts = 0;
  private current: { setDir: string; version: number } | null = null;
  private crashes = 0;
  private restartTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly argv: readonly string[],
    private readonly settleMs: number,
  ) {}

  async resume(setDir: string, version: number): Promise<void> {
    if (!this.child) await this.activate(setDir, version);
  }

  async activate(setDir: string, version: number): Promise<Activated> {
    await this.stop();
    this.current = { setDir, version };
    this.crashes = 0;
    await this.start();
    return { activation: 'restart' };
  }

  adopt(setDir: string, version: number): void {
    this.current = { setDir, version };
  }

  private start(): Promise<void> {
    const target = this.current!;
    return new Promise((resolve, reject) => {
      const child = spawn(this.argv[0], this.argv.slice(1), { env: envFor(target.setDir, target.version), stdio: ['pipe', 'pipe', 'pipe'] });
      this.child = child;
      this.starts++;
      let out = '';
      const collect = (c: Buffer) => {
        out = (out + c.toString('utf8')).slice(-2 * OUTPUT_TAIL);
      };
      child.stdout!.on('data', collect);
      child.stderr!.on('data', collect);
      child.stdin!.on('error', () => {});
      let settled = false;
      const settle = setTimeout(() => {
        settled = true;
        resolve();
      }, this.settleMs);
      child.once('error', (cause) => {
        if (this.child === child) this.child = null;
        if (!settled) {
          settled = true;
          clearTimeout(settle);
          reject(new AgentError('activation_failed', `vertex ${this.argv[0]} could not start: ${cause.message}`, { cause }));
        }
      });
      child.once('exit', (code, signal) => {
        if (this.child !== child) return; // stopped on purpose
        this.child = null;
        if (!settled) {
          settled = true;
          clearTimeout(settle);
          // Let the pipes drain so the output explains the failure.
          setTimeout(
            () => reject(new AgentError('activation_failed', `vertex exited with ${signal ?? code} right after starting: ${tail(out) || '(no output)'}`)),
            20,
          );
          return;
        }
        this.scheduleRestart();
      });
    });
  }

  /** A crash of a vertex that had started fine: retried, but never in a tight loop. */
  private scheduleRestart(): void {
    const delay = backoffDelay(this.crashes++, 1000, 60_000);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.current && !this.child) this.start().catch(() => this.scheduleRestart());
    }, delay);
    this.restartTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }

  vertex() {
    return { pid: this.child?.pid ?? null, starts: this.starts };
  }
}

export function createActivator(activation: Activation): Activator {
  switch (activation.kind) {
    case 'none':
      return new NoActivation();
    case 'command':
      return new CommandActivation(activation.command, activation.timeout_seconds * 1000);
    case 'supervise':
      return new Supervisor(activation.argv, activation.settle_ms);
    default: {
      const never: never = activation;
      throw new TypeError(`unknown activation ${JSON.stringify(never)}`);
    }
  }
}
