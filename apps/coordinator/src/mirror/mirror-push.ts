import type { Logger } from 'pino';
import { auditFs, loadIsomorphicGit } from './repo/audit-repo.js';

export interface PushTarget {
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
}

/** Exponential backoff: base, 2·base, 4·base … capped. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
}

export interface PushOptions {
  readonly baseMs?: number;
  readonly maxMs?: number;
  /** Replaceable for tests. */
  readonly push?: (gitdir: string, target: PushTarget) => Promise<void>;
}

/** Pushes with isomorphic-git, loaded with its HTTP client on the first push (audit-repo.ts). */
async function isomorphicPush(gitdir: string, target: PushTarget): Promise<void> {
  const [git, { default: http }] = await Promise.all([loadIsomorphicGit(), import('isomorphic-git/http/node')]);
  const result = await git.push({
    fs: auditFs,
    http,
    gitdir,
    url: target.url,
    ref: 'main',
    remoteRef: 'refs/heads/main',
    onAuth: () => ({ username: target.username ?? 'florete', password: target.password ?? '' }),
  });
  if (!result.ok) throw new Error(result.error ?? `push to ${target.url} was refused`);
}

/**
 * Pushes the mirror's branch to a remote after commits. A push always sends the current head, so
 * requests arriving during a push or a backoff wait fold into one; failures retry with backoff
 * and never reach the publish path.
 */
export class MirrorPusher {
  pushed = 0;
  failures = 0;
  lastError: string | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly gitdir: string,
    private readonly target: PushTarget,
    private readonly log: Logger,
    private readonly options: PushOptions = {},
  ) {}

  request(): void {
    if (this.closed || this.timer) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pushNow().finally(() => {
      this.running = null;
      if (this.again && !this.timer) {
        this.again = false;
        this.request();
      }
    });
  }

  /** Resolves when no push is in flight (a scheduled retry may remain). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.idle();
  }

  private async pushNow(): Promise<void> {
    try {
      await (this.options.push ?? isomorphicPush)(this.gitdir, this.target);
      this.attempt = 0;
      this.pushed++;
      this.lastError = null;
    } catch (err) {
      this.failures++;
      this.lastError = err instanceof Error ? err.message : String(err);
      const delay = backoffDelay(this.attempt++, this.options.baseMs ?? 1000, this.options.maxMs ?? 300_000);
      this.log.warn({ err: this.lastError, retry_ms: delay, url: redact(this.target.url) }, 'mirror push failed');
      if (this.closed) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.request();
      }, delay);
      this.timer.unref();
    }
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}
