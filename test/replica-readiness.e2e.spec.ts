import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import { waitFor } from './fixtures/agent/harness.js';
import { stopChild } from './support/child.js';
import { HAPROXY, startHaproxy } from './support/haproxy.js';

/**
 * A replica whose PostgreSQL is gone leaves HAProxy's rotation, and comes back with it. Two replicas
 * behind Debian's HAProxy, checked on /readyz as deploy/haproxy/haproxy.cfg checks them; the second
 * runs on a PostgreSQL cluster of its own, which is then stopped. Its /readyz must answer 503,
 * promptly, while the process keeps running, and the proxy must send every request to the first.
 * Started again, the same cluster takes the replica back into rotation, writing as before.
 */

jest.setTimeout(180_000);

interface ThrowawayPostgres {
  readonly url: string;
  /** Stops the server and removes its files. */
  stop(): void;
  /** Stops the server, its files kept: `fast` tells every session and ends it, `immediate` kills every server process. */
  stopServer(mode: 'fast' | 'immediate'): void;
  startServer(): void;
}

/** A PostgreSQL cluster of its own, from the script scripts/test.mjs starts the suite's with. */
async function startOwnPostgres(): Promise<ThrowawayPostgres> {
  const mod = (await import(pathToFileURL(resolve('scripts/throwaway-postgres.mjs')).href)) as { startPostgres(): Promise<ThrowawayPostgres> };
  return mod.startPostgres();
}

/** The shipped check (GET /readyz, 200 expected), every 200 ms; each answer names the server that gave it. */
function haproxyConfig(port: number, backends: readonly number[]): string {
  return [
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 5s',
    '  timeout server 5s',
    '  timeout check 3s',
    'frontend florete',
    `  bind 127.0.0.1:${port}`,
    '  default_backend coordinators',
    'backend coordinators',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  http-response set-header x-served-by %[srv_name]',
    ...backends.map((p, i) => `  server s${i + 1} 127.0.0.1:${p} check inter 200 fall 1 rise 1`),
    '',
  ].join('\n');
}

const describeReadiness = hasPostgres ? describe : describe.skip;

describeReadiness('a replica whose PostgreSQL stops, behind HAProxy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'florete-readiness-'));
  let ownPostgres: ThrowawayPostgres | undefined;
  let kept: CoordinatorProcess;
  let orphaned: CoordinatorProcess;
  let proxy: ChildProcess | undefined;
  let proxyUrl = '';

  beforeAll(async () => {
    if (!HAPROXY) throw new Error('haproxy is not installed (Debian package haproxy; .ci/run installs it)');
    ownPostgres = await startOwnPostgres();
    // The proxy's checks all come from 127.0.0.1, five a second: the anonymous rate limit would take both replicas out.
    const env = { FLORETE_ANON_RATE_LIMIT: '0', FLORETE_LOG_LEVEL: 'warn' };
    kept = await startCoordinatorProcess({ databaseUrl: await createPostgresDatabase(), env });
    orphaned = await startCoordinatorProcess({ databaseUrl: ownPostgres.url, env });
    ({ url: proxyUrl, child: proxy } = await startHaproxy(dir, (port) =>
      haproxyConfig(
        port,
        [kept, orphaned].map((r) => Number(new URL(r.url).port)),
      ),
    ));
  });

  afterAll(async () => {
    if (proxy) await stopChild(proxy, 'HAProxy');
    await kept?.stop();
    await orphaned?.stop();
    ownPostgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Which replica answered each of n requests through the proxy, and with what status. */
  async function throughProxy(n: number): Promise<{ server: string | null; status: number }[]> {
    const out: { server: string | null; status: number }[] = [];
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${proxyUrl}/readyz`);
      await res.arrayBuffer();
      out.push({ server: res.headers.get('x-served-by'), status: res.status });
    }
    return out;
  }

  /** The replicas the proxy sends requests to, once both answer through it. */
  async function bothRouted(): Promise<string[]> {
    const seen = await waitFor('the proxy to route to both replicas', async () => {
      const answers = await throughProxy(6).catch(() => []);
      const servers = new Set(answers.filter((a) => a.status === 200).map((a) => a.server));
      return servers.size === 2 ? servers : undefined;
    });
    return [...seen].sort() as string[];
  }

  it('routes to both replicas while both databases answer', async () => {
    expect(await bothRouted()).toEqual(['s1', 's2']);
  });

  it('takes the replica out once its database stops: /readyz answers 503 promptly, the process keeps running', async () => {
    // Requests in flight as the database stops, and for a second after: the connections they hold end
    // under them, or are handed out as the pool learns they have ended. Each request must fail on its
    // own and leave the process running.
    let stopping = false;
    const inFlight = Array.from({ length: 4 }, async () => {
      while (!stopping)
        await fetch(`${orphaned.url}/readyz`).then(
          (r) => r.arrayBuffer(),
          () => undefined,
        );
    });
    await new Promise((r) => setTimeout(r, 300));
    ownPostgres!.stopServer('immediate');
    await new Promise((r) => setTimeout(r, 1000));
    stopping = true;
    await Promise.all(inFlight);
    const started = Date.now();
    const direct = await new Client(orphaned.url).get('/readyz');
    const elapsed = Date.now() - started;
    expect({ status: direct.status, body: direct.body }).toEqual({ status: 503, body: expect.objectContaining({ status: 'not ready', database: 'postgres' }) });
    expect(elapsed).toBeLessThan(5_000);
    // A request that needs the database is told to come back, not that the coordinator failed (500)
    // or that its token is wrong (401): with the token's own check, which reads the database too.
    for (const path of ['/v1/publishes', '/v1/ledger/head', '/v1/nodes']) {
      const away = await new Client(orphaned.url, orphaned.adminToken).get(path);
      expect({ path, status: away.status, code: away.body?.code, retryAfter: away.headers.get('retry-after') }).toEqual({
        path,
        status: 503,
        code: 'database_unavailable',
        retryAfter: '5',
      });
    }
    // Still serving /healthz: down for the proxy because of its database, not because it crashed.
    expect((await new Client(orphaned.url).get('/healthz')).status).toBe(200);
    expect({ exitCode: orphaned.child.exitCode, signal: orphaned.child.signalCode }).toEqual({ exitCode: null, signal: null });

    // One failed check takes it out; after that, every request goes to the replica whose database answers.
    await waitFor('the proxy to stop routing to the replica without a database', async () => (await throughProxy(4)).every((a) => a.server === 's1'));
    const answers = await throughProxy(20);
    expect(answers.filter((a) => a.server !== 's1' || a.status !== 200)).toEqual([]);
  });

  it('takes the replica back once its database starts again: ready, routed to, and writing, the same process', async () => {
    ownPostgres!.startServer();
    const orphanedClient = new Client(orphaned.url, orphaned.adminToken);
    await waitFor('the replica to be ready again', async () => (await orphanedClient.get('/readyz')).status === 200);
    expect(await bothRouted()).toEqual(['s1', 's2']);
    // Writes go through connections opened since: a publish is recorded and read back.
    const before = (await orphanedClient.get('/v1/ledger/head')).body;
    const sha = await orphanedClient.putBlob(`${JSON.stringify({ node: 'after-restart' })}\n`);
    const published = await orphanedClient.post('/v1/publishes', {
      message: 'after the restart',
      nodes: { 'after-restart': { artifacts: { 'flor.json': sha } } },
    });
    expect(published.status).toBe(201);
    const after = (await orphanedClient.get('/v1/ledger/head')).body;
    expect(after.position).toBeGreaterThan(before.position);
    // The mirror, whose lock was a session of the stopped server, takes it again and catches up.
    const mirror = await waitFor('the mirror to catch up after the restart', async () => {
      const ready = (await orphanedClient.get('/readyz')).body;
      return ready?.mirror?.position >= after.position ? ready.mirror : undefined;
    });
    expect(mirror).toEqual(expect.objectContaining({ lag: 0 }));
    expect(mirror.error).toBeUndefined();
    expect({ exitCode: orphaned.child.exitCode, signal: orphaned.child.signalCode }).toEqual({ exitCode: null, signal: null });
  });
});
