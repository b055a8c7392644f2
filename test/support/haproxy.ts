import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { stopChild } from './child.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './coordinator-process.js';
import { createPostgresDatabase } from './databases.js';
import { Client } from './http.js';
import { waitFor } from '../fixtures/agent/harness.js';

/** Debian's HAProxy, where this machine has it (.ci/run installs it). */
export const HAPROXY = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find((p) => spawnSync(p, ['-v']).status === 0);

export interface RunningHaproxy {
  readonly url: string;
  readonly child: ChildProcess;
}

/**
 * Writes `config(port)` for a free loopback port to `dir/haproxy.cfg`, has HAProxy check it (a refused
 * config fails the test with HAProxy's words), and runs it in the foreground; its output goes to
 * `log` when one is given.
 */
export async function startHaproxy(dir: string, config: (port: number) => string, log?: string[]): Promise<RunningHaproxy> {
  if (!HAPROXY) throw new Error('haproxy is not installed (Debian package haproxy; .ci/run installs it)');
  const port = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, config(port));
  const check = spawnSync(HAPROXY, ['-c', '-f', cfg], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`haproxy refused its config:\n${check.stdout}${check.stderr}`);
  const child = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', log ? 'pipe' : 'ignore', log ? 'pipe' : 'ignore'] });
  if (log) {
    child.stdout!.on('data', (c: Buffer) => log.push(c.toString()));
    child.stderr!.on('data', (c: Buffer) => log.push(c.toString()));
  }
  return { url: `http://127.0.0.1:${port}`, child };
}

/** deploy/haproxy/haproxy.cfg's timeouts for held watches, on loopback, with fast health checks: three missed in a row mark a replica down (one slow /readyz on a loaded machine must not). */
export function watchingProxyConfig(port: number, backends: readonly number[]): string {
  return [
    'global',
    '  log stderr format short local0 warning',
    'defaults',
    '  mode http',
    '  log global',
    '  timeout connect 1s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  retries 2',
    '  option redispatch',
    'frontend florete',
    `  bind 127.0.0.1:${port}`,
    '  timeout client 330s',
    '  timeout http-request 10s',
    '  timeout http-keep-alive 10s',
    '  default_backend coordinators',
    'backend coordinators',
    '  balance roundrobin',
    '  http-request set-timeout server 330s if { path_end /bundle }',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    ...backends.map((p, i) => `  server s${i + 1} 127.0.0.1:${p} check inter 300 fall 3 rise 1`),
    '',
  ].join('\n');
}

export interface WatchedReplicas {
  /** Both replicas; the first wrote the first admin token. */
  readonly replicas: readonly CoordinatorProcess[];
  readonly proxyUrl: string;
  /** Stops the proxy, then every replica still running. */
  stop(): Promise<void>;
}

/**
 * Two coordinator replicas on one fresh PostgreSQL database, sharing the keys kept in `dir`, behind
 * HAProxy with watchingProxyConfig: what the watch and rollout tests run their agents against. `env`
 * is added to the replicas' environment; the proxy is answering when this returns.
 */
export async function startWatchedReplicas(dir: string, env: Record<string, string> = {}): Promise<WatchedReplicas> {
  if (!HAPROXY) throw new Error('haproxy is not installed (Debian package haproxy; .ci/run installs it)');
  const databaseUrl = await createPostgresDatabase();
  const all = {
    FLORETE_SIGNING_KEYS_FILE: join(dir, 'signing-keys.json'),
    FLORETE_REPO_KEY_FILE: join(dir, 'repo-signing-key.asc'),
    FLORETE_ANON_RATE_LIMIT: '0',
    FLORETE_MIRROR: 'off',
    FLORETE_LOG_LEVEL: 'warn',
    ...env,
  };
  const replicas = [await startCoordinatorProcess({ databaseUrl, env: all }), await startCoordinatorProcess({ databaseUrl, env: all })];
  const proxy = await startHaproxy(dir, (port) =>
    watchingProxyConfig(
      port,
      replicas.map((r) => Number(new URL(r.url).port)),
    ),
  );
  const stop = async () => {
    await stopChild(proxy.child, 'HAProxy');
    for (const r of replicas) await r.stop();
  };
  try {
    await waitFor(
      'the proxy to answer',
      async () => (await new Client(proxy.url, replicas[0].adminToken).get('/healthz').catch(() => undefined))?.status === 200,
      20_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { replicas, proxyUrl: proxy.url, stop };
}
