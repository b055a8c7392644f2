import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './free-port.js';

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
