import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AgentConfig, AgentIdentity, AgentStatus, ApplySetOutcome, ControlRequest, ControlResponse, LocalSetRecord } from '#contracts';
import { createActivator, type Activator } from './activator.js';
import { behindOf } from './behind.js';
import { freshnessOf } from './freshness.js';
import { serveControlSocket } from './control-socket.js';
import type { LineServer } from '#runtime';
import { HotReloadActivation } from './hot-reload.activator.js';
import { agentLifecycle } from './lifecycle.js';
import type { Log } from '#runtime';
import { isRetired } from './retirement.js';
import {
  pollBackoffDelay,
  firstPollDelay,
  nextPollDelay,
  retiredPollDelay,
  timingFrom,
  watchRetryDelay,
  watchWaitSeconds,
  type PollTiming,
} from './schedule.js';
import { StateDir } from './state-dir.js';
import { SyncPass, type PassOutcome, type Watched } from './sync-pass.js';
import { LocalSetApply } from './local-set.js';
import { confirmationView } from './confirmation.js';

/**
 * While a version is provisional: how often its failing checks run again, and a poll is tried when
 * the contact after activation is still missing. The deadline itself always gets a wake-up of its own.
 */
const CONFIRM_RETRY_MS = 3000;

/** How often a retired node's agent looks at identity.json for a new enrolment: a stat, no network. */
const IDENTITY_WATCH_MS = 2000;

const NOTHING_TO_WATCH = 'nothing to watch with yet (not enrolled, nothing published, or a pass to finish)';

/**
 * `flor agent run`: a pass at start, then one per poll interval of the active agent.json (re-read
 * after every pass, so a new interval applies without a restart), with splay jitter, and with
 * exponential backoff while the coordinator cannot be reached. Passes never overlap: the periodic
 * one and those asked for on the control socket queue behind each other. Once the coordinator says
 * the node was retired it polls at most hourly, also across restarts, and at once when the node is
 * enrolled again.
 *
 * Between passes it watches its bundle (agent.json sync.watch, on unless turned off): one request
 * held by the coordinator until the bundle changes or the poll interval runs out, made outside the
 * pass queue and handed to a pass as its fetch. A watch that fails is retried within seconds, with
 * jitter; one the coordinator did not hold (it does not watch) leaves the poll interval in charge
 * until the next check.
 */
export class Daemon {
  private readonly activator: Activator;
  private readonly syncPass: SyncPass;
  private readonly localSet: LocalSetApply;
  private server: LineServer | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Commit-confirmed: wakes the agent for a provisional version's checks, contact and deadline, apart from the poll schedule. */
  private confirmTimer: NodeJS.Timeout | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private failures = 0;
  private nextPollAt: Date | null = null;
  private stopping = false;
  private watchingIdentity = false;
  private handedOver!: (version: string) => void;
  /**
   * Settles with the agent version this process installed and ran once (a self-upgrade): the pass
   * that did it has reported, and the agent is to stop and exit 0 so its supervisor starts the new one.
   */
  readonly handover: Promise<string> = new Promise((resolve) => (this.handedOver = resolve));
  /** A version only a dry run has seen, since the last real pass that fetched: kept here because a dry run writes nothing. */
  private dryRunSeen: { version: number; at: string } | null = null;
  /** The watch held now, to cancel when a pass is scheduled otherwise. */
  private watchAbort: AbortController | null = null;
  private watchView: NonNullable<AgentStatus['watch']> = { state: 'polling', since: null, reason: 'not watched yet' };

  constructor(
    private readonly dir: StateDir,
    private readonly config: AgentConfig,
    private readonly log: Log,
    /** The local config file: never a file resource's path. */
    configPath?: string,
  ) {
    const restart = createActivator(config.activation);
    this.activator = config.vertex_control ? new HotReloadActivation(restart, config.vertex_control, log) : restart;
    this.syncPass = new SyncPass(
      dir,
      config,
      this.activator,
      log,
      undefined,
      configPath ? [resolve(configPath)] : [],
      undefined,
      undefined,
      configPath ? resolve(configPath) : undefined,
    );
    this.localSet = new LocalSetApply(dir, config, this.activator, this.syncPass, log);
  }

  async start(): Promise<void> {
    this.dir.ensure();
    this.dir.sweepLeftovers();
    this.server = await serveControlSocket(this.dir.socketPath, (req) => this.handle(req));
    this.log('info', 'agent started', { state_dir: this.dir.root, socket: this.dir.socketPath, enrolled: this.dir.readIdentity() !== null });
    // Before anything resumes: a revert a crash interrupted, or a window that closed while the agent was down.
    await this.syncPass.onStart().catch((err: Error) => this.log('error', 'revert at start failed', { reason: err.message }));
    // A set applied before this start keeps running; a pending one is finished by the first pass.
    const active = this.dir.activeVersion();
    const state = this.dir.readState();
    const local = this.dir.activeLocalSet();
    if (active > 0 && state.applied_version === active) {
      await this.activator.resume(this.dir.setDir(active), active).catch((err: Error) => this.log('error', 'vertex did not start', { reason: err.message }));
    } else if (local !== null && state.local_set?.set_digest === local) {
      // A local set in effect (flor agent apply --set) runs until a coordinator's version takes over.
      await this.activator.resume(this.dir.localSetDir(local), 0).catch((err: Error) => this.log('error', 'vertex did not start', { reason: err.message }));
    }
    this.armConfirmation();
    const retired = this.retired();
    const delay = firstPollDelay(retired, state.last_poll === null ? null : Date.parse(state.last_poll), Date.now());
    if (delay === 0) {
      // The first pass is a plain one: it finishes what a crash left and reports, before any watch.
      void this.periodic(true);
      return;
    }
    this.arm(delay);
    this.onRetired();
  }

  /** Serialises passes; the returned promise settles with this pass's outcome. */
  sync(dryRun: boolean, watched?: Watched): Promise<PassOutcome> {
    const run = this.queue.then(async () => {
      try {
        const outcome = await this.syncPass.run(dryRun, watched);
        this.remember(outcome);
        return outcome;
      } finally {
        this.checkHandover();
        this.armConfirmation();
      }
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** After a pass or a local set: a new agent version that passed its self-check takes over from this process. */
  private checkHandover(): void {
    const version = this.syncPass.handover;
    if (version === null) return;
    this.log('info', 'handing over to the new agent version', { version });
    this.handedOver(version);
  }

  /** `flor agent apply --set`: queued with the passes, so a local set never lands in the middle of one. */
  applySet(request: { dir: string; node?: string }): Promise<ApplySetOutcome> {
    const run = this.queue.then(() => this.localSet.run(request)).finally(() => this.checkHandover());
    this.queue = run.catch(() => {});
    return run;
  }

  private remember(o: PassOutcome): void {
    if (o.dry_run) {
      if (o.result === 'would_apply' && o.version !== null) this.dryRunSeen = { version: o.version, at: new Date().toISOString() };
      else if (o.result === 'up_to_date') this.dryRunSeen = null;
    } else if (o.result !== 'error') {
      // A real pass that got the bundle applied it or recorded why not: the dry run's news is old.
      this.dryRunSeen = null;
    }
  }

  /** A check: a watch when watching is on (a watch is answered at once when the bundle changed), else a pass. */
  private async periodic(plain = false): Promise<void> {
    if (this.stopping) return;
    if (!plain && this.timing().watch && !this.retired()) return this.watchOnce();
    const outcome = await this.sync(false).catch((err: Error) => {
      this.log('error', 'sync pass crashed', { reason: err.message, stack: err.stack });
      return null;
    });
    this.schedule(outcome);
  }

  /** Arms the confirmation wake-up while a version is provisional or a revert is pending; clears it otherwise. */
  private armConfirmation(): void {
    if (this.confirmTimer) clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    if (this.stopping) return;
    let state;
    try {
      state = this.dir.readState();
    } catch {
      return;
    }
    const pendingRevert = state.reverted !== null && !state.reverted.done;
    if (!pendingRevert && state.provisional === null) return;
    const untilDeadline = state.provisional ? Math.max(0, Date.parse(state.provisional.deadline) - Date.now()) : CONFIRM_RETRY_MS;
    this.confirmTimer = setTimeout(
      () => {
        this.confirmTimer = null;
        void this.confirmationTick();
      },
      Math.min(CONFIRM_RETRY_MS, untilDeadline),
    );
  }

  /** Judges the provisional version (checks, deadline) in the queue with the passes; polls when a contact is what it waits for. */
  private async confirmationTick(): Promise<void> {
    if (this.stopping) return;
    const tick = this.queue.then(() => this.syncPass.tick());
    this.queue = tick.catch(() => {});
    const { needsContact } = await tick.catch((err: Error) => {
      this.log('error', 'confirmation step crashed', { reason: err.message, stack: err.stack });
      return { needsContact: false };
    });
    if (needsContact) await this.sync(false).catch(() => null);
    this.armConfirmation();
  }

  /**
   * One watch: held outside the pass queue (so `flor agent sync` never waits behind it), its answer
   * then taken by a pass. Cancelled when something else schedules the next check.
   */
  private async watchOnce(): Promise<void> {
    this.cancelWatch();
    const timing = this.timing();
    const wait = watchWaitSeconds(timing);
    const abort = new AbortController();
    this.watchAbort = abort;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // The latest the check ends: the wait, and the coordinator's jitter of up to a sixteenth.
    this.nextPollAt = new Date(Date.now() + Math.ceil((wait * 1000 * 17) / 16));
    this.watchView = { state: 'watching', since: new Date().toISOString(), reason: null };
    let watched: Watched | null;
    try {
      watched = await this.syncPass.watch(wait, abort.signal);
    } catch (err) {
      this.log('error', 'watch crashed', { reason: (err as Error).message });
      watched = null;
    } finally {
      if (this.watchAbort === abort) this.watchAbort = null;
    }
    if (abort.signal.aborted || this.stopping) return;
    if (watched === null) {
      // Not enrolled, nothing applied yet, or a pass half-done: a plain pass, then a watch if the pass
      // left something to watch with (it applied the first version: an agent whose first pass found
      // the coordinator down comes here), else the poll interval (watching again right away would
      // spin while there is still nothing to watch with).
      this.watchView = { state: 'polling', since: null, reason: NOTHING_TO_WATCH };
      const outcome = await this.sync(false).catch((err: Error) => {
        this.log('error', 'sync pass crashed', { reason: err.message, stack: err.stack });
        return null;
      });
      return this.schedule(outcome, !this.canWatch());
    }
    const refused = watched.answer.ok && watched.answer.fetched.status === 304 && watched.answer.fetched.held !== true;
    if (!watched.answer.ok) this.watchView = { state: 'polling', since: null, reason: `watch failed, retrying: ${watched.answer.error.message}` };
    else if (refused) this.watchView = { state: 'polling', since: null, reason: 'the coordinator did not hold the watch: polling at the interval' };
    const outcome = await this.sync(false, watched).catch((err: Error) => {
      this.log('error', 'sync pass crashed', { reason: err.message, stack: err.stack });
      return null;
    });
    this.schedule(outcome, refused);
  }

  /** False when the files do not parse: the pass that ran reports that, and a scheduler must not throw. */
  private canWatch(): boolean {
    try {
      return this.syncPass.canWatch();
    } catch {
      return false;
    }
  }

  private cancelWatch(): void {
    this.watchAbort?.abort();
    this.watchAbort = null;
  }

  /** `refused`: the last watch was not held, so the next check waits out the poll interval. */
  private schedule(outcome: PassOutcome | null, refused = false): void {
    if (this.stopping) return;
    this.cancelWatch();
    const timing = this.timing();
    const retired = this.retired();
    const watching = timing.watch && !retired;
    if (!timing.watch) this.watchView = { state: 'off', since: null, reason: null };
    let delay: number;
    if (retired) {
      this.failures = 0;
      delay = retiredPollDelay(timing, Math.random());
    } else if (outcome === null || outcome.contactFailed) {
      this.failures++;
      const max = this.config.max_backoff_seconds * 1000;
      delay = watching
        ? watchRetryDelay(timing, this.failures, max, Math.random(), outcome?.retryAfterMs)
        : pollBackoffDelay(timing, this.failures, max, Math.random(), outcome?.retryAfterMs);
      if (watching) this.watchView = { state: 'polling', since: null, reason: `retrying after: ${outcome?.reason ?? 'a crashed pass'}` };
    } else {
      this.failures = 0;
      if (watching && !refused) {
        if (this.canWatch()) {
          this.stopWatchingIdentity();
          void this.watchOnce();
          return;
        }
        // A pass just ran: with nothing to watch with yet (nothing published to this node), a watch
        // would only run a second pass at once, so the next check waits out the poll interval.
        this.watchView = { state: 'polling', since: null, reason: NOTHING_TO_WATCH };
      }
      delay = nextPollDelay(timing, Math.random());
    }
    this.arm(delay);
    if (retired) this.onRetired();
    else this.stopWatchingIdentity();
  }

  private arm(delay: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.nextPollAt = new Date(Date.now() + delay);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.periodic();
    }, delay);
  }

  /** False when the files do not parse: the next pass reports that, and a scheduler must not throw. */
  private retired(): boolean {
    try {
      return isRetired(this.dir.readState(), this.dir.readIdentity());
    } catch {
      return false;
    }
  }

  /**
   * Says it in the log each time it is decided (hourly at most), with the ways on; and watches
   * identity.json so that enrolling again is acted on at once rather than at the next hourly poll.
   */
  private onRetired(): void {
    const state = this.dir.readState();
    this.log('warn', 'node retired', {
      node: this.dir.readIdentity()?.node,
      version: state.retired?.version ?? null,
      since: state.retired?.at,
      reason: state.last_error,
      next_poll: this.nextPollAt?.toISOString(),
    });
    if (this.watchingIdentity) return;
    this.watchingIdentity = true;
    watchFile(this.dir.identityPath, { interval: IDENTITY_WATCH_MS, persistent: false }, () => {
      if (this.stopping || this.retired()) return;
      this.stopWatchingIdentity();
      this.log('info', 'enrolled again: polling now');
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      void this.periodic();
    });
  }

  private stopWatchingIdentity(): void {
    if (!this.watchingIdentity) return;
    this.watchingIdentity = false;
    unwatchFile(this.dir.identityPath);
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
      case 'apply_set':
        return { ok: true, apply_set: await this.applySet({ dir: req.dir, ...(req.node !== undefined ? { node: req.node } : {}) }) };
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
    const retired = isRetired(state, identity) ? state.retired : null;
    return {
      ...agentLifecycle(identity, state),
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
      retired: retired ? { at: retired.at, version: retired.version } : null,
      behind: behindOf({ appliedVersion: state.applied_version, activeVersion: active, unapplied: state.unapplied, retired, dryRun: this.dryRunSeen }),
      local_set: localSetView(state.local_set),
      confirmation: confirmationView(state),
      watch: this.watchView,
      ...this.trustStatus(identity),
    };
  }

  /** The trust version walked to and how fresh the newest verified checkpoint is, for this enrolment. */
  private trustStatus(identity: AgentIdentity | null): Pick<AgentStatus, 'trust_version' | 'freshness'> {
    const trust = this.dir.readTrust();
    const mine = identity && trust && trust.enrolled_at === identity.enrolled_at ? trust : null;
    return { trust_version: mine?.version ?? null, freshness: freshnessOf(identity, this.dir.readCheckpoint(), this.config.max_staleness, new Date()) };
  }

  /** SIGTERM: no new passes, let a running one finish, close the socket, stop a supervised vertex. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.cancelWatch();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.confirmTimer) clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    this.stopWatchingIdentity();
    // Stop accepting, but let a request already on the socket get its answer.
    const closed = new Promise<void>((r) => (this.server ? this.server.server.close(() => r()) : r()));
    await this.queue;
    await this.activator.stop();
    await closed;
    this.log('info', 'agent stopped');
  }
}

/** What status shows of the local set in effect: the record without its internal config digest. */
function localSetView(r: LocalSetRecord | null): AgentStatus['local_set'] {
  return r ? { node: r.node, set_digest: r.set_digest, source: r.source, applied_at: r.applied_at } : null;
}
