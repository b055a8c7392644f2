import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  sleep,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';
import { stopChild, waitForExit } from './support/child.js';
import { HAPROXY, startHaproxy } from './support/haproxy.js';

/**
 * Two coordinator replicas on one PostgreSQL behind HAProxy (Debian's package), a fleet of real
 * agents polling through the proxy, publishes running all the while, and one replica killed with
 * SIGKILL in the middle. What must hold: every publish answered 201 is in the ledger and the chain
 * verifies, the agents converge through the survivor, the survivor takes over the audit mirror and
 * brings it to the ledger's head, and polls keep being answered.
 */

jest.setTimeout(300_000);

const NODES = ['r1', 'r2', 'r3', 'r4'] as const;

const treeFor = (marker: string) => Object.fromEntries(NODES.map((n) => [n, { 'agent.json': agentJson(n, 1), 'flor.json': florJson(n, marker) }]));

/** Round robin over both replicas, each checked on /readyz (as deploy/haproxy/haproxy.cfg) every 200 ms and taken out after one failed check. */
function haproxyConfig(port: number, backends: readonly number[]): string {
  return [
    'global',
    '  log stderr format short local0 warning',
    'defaults',
    '  mode http',
    '  log global',
    '  timeout connect 1s',
    '  timeout client 5s',
    '  timeout server 5s',
    '  retries 2',
    '  option redispatch',
    'frontend florete',
    `  bind 127.0.0.1:${port}`,
    '  default_backend coordinators',
    'backend coordinators',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    ...backends.map((p, i) => `  server s${i + 1} 127.0.0.1:${p} check inter 200 fall 1 rise 1`),
    '',
  ].join('\n');
}

const describeReplicas = hasPostgres ? describe : describe.skip;

describeReplicas('two coordinator replicas behind HAProxy, one killed mid-run', () => {
  const shared = mkdtempSync(join(tmpdir(), 'florete-replicas-'));
  let replicas: CoordinatorProcess[] = [];
  let proxy: ChildProcess | undefined;
  const proxyLog: string[] = [];
  let proxyUrl = '';
  let admin: Client;
  let fleet: Fleet;
  const files: Record<string, AgentFiles> = {};

  beforeAll(async () => {
    if (!HAPROXY) throw new Error('haproxy is not installed (Debian package haproxy; .ci/run installs it)');
    const databaseUrl = await createPostgresDatabase();
    // Both replicas sign with the same keys, as the README asks of replicas. The proxy's health checks
    // all come from 127.0.0.1, five a second: the anonymous rate limit would take both replicas out.
    const env = {
      FLORETE_SIGNING_KEYS_FILE: join(shared, 'signing-keys.json'),
      FLORETE_REPO_KEY_FILE: join(shared, 'repo-signing-key.asc'),
      FLORETE_ANON_RATE_LIMIT: '0',
      FLORETE_MIRROR_INTERVAL_MS: '200',
      FLORETE_LOG_LEVEL: 'warn',
    };
    // One after the other: the first migrates the database and creates the keys and the first admin token.
    const first = await startCoordinatorProcess({ databaseUrl, env });
    const second = await startCoordinatorProcess({ databaseUrl, env });
    replicas = [first, second];
    ({ url: proxyUrl, child: proxy } = await startHaproxy(
      shared,
      (port) =>
        haproxyConfig(
          port,
          replicas.map((r) => Number(new URL(r.url).port)),
        ),
      proxyLog,
    ));
    admin = new Client(proxyUrl, first.adminToken);
    fleet = new Fleet(admin);
    await waitFor('the proxy to answer', async () => (await admin.get('/healthz').catch(() => undefined))?.status === 200, 20_000);
    for (const node of NODES) files[node] = agentFiles('none');
  });

  afterAll(async () => {
    await stopAllAgents();
    if (proxy) await stopChild(proxy, 'HAProxy');
    for (const r of replicas) await r.stop();
    for (const f of Object.values(files)) removeTree(f.root);
    rmSync(shared, { recursive: true, force: true });
  });

  it('answers through the proxy from both replicas, both writing the mirror under its one lock', async () => {
    for (let i = 0; i < 4; i++) expect((await admin.get('/readyz')).status).toBe(200);
    // The mirror's writer lock is taken per batch: whichever replica holds it writes, and the other
    // finds it taken and stands by for that round, so which one writes changes from round to round.
    // Both must be working under the lock (never failing or diverged); the mirror check after the
    // kill proves no two batches interleaved.
    await waitFor('both replicas writing the mirror under the lock', async () => {
      const states = (await Promise.all(replicas.map((r) => new Client(r.url).get('/readyz')))).map((r) => r.body.mirror.state as string);
      return states.every((s) => s === 'writing' || s === 'standby');
    });
  });

  it('loses no acknowledged publish when a replica is killed, and the fleet converges through the survivor', async () => {
    await fleet.publish(treeFor('start'), 'replicas: start');
    for (const node of NODES) {
      const token = await fleet.enrolmentToken(node);
      const r = await flor(['agent', 'enroll', '--coordinator', proxyUrl, '--token', token, ...files[node].args]);
      expect(r).toEqual(expect.objectContaining({ code: 0 }));
      await startAgent(files[node]);
    }
    const credential = JSON.parse(readFileSync(join(files.r1.stateDir, 'identity.json'), 'utf8')).credential as string;

    // Polls through the proxy with r1's credential, as fast as they are answered, counting what is not a 200 or 304.
    const polls = { ok: 0, errors: 0, okAfterKill: 0 };
    let killed = false;
    let polling = true;
    const poller = (async () => {
      let etag = '';
      while (polling) {
        try {
          const res = await fetch(`${proxyUrl}/v1/nodes/r1/bundle`, {
            headers: { authorization: `Bearer ${credential}`, ...(etag ? { 'if-none-match': etag } : {}) },
          });
          await res.arrayBuffer();
          if (res.status === 200 || res.status === 304) {
            polls.ok++;
            if (killed) polls.okAfterKill++;
            etag = res.headers.get('etag') ?? etag;
          } else polls.errors++;
        } catch {
          polls.errors++;
        }
        await sleep(20);
      }
    })();

    // Publishes one after another through the proxy; each answer is kept, acknowledged or not.
    const acknowledged: { publish_id: string; position: number; changed: { node: string; to: number }[] }[] = [];
    const unacknowledged: string[] = [];
    let round = 0;
    const publishRound = async () => {
      round++;
      const nodes = Object.fromEntries(NODES.map((n) => [n, { artifacts: {} as Record<string, string> }]));
      try {
        for (const [node, content] of Object.entries(treeFor(`round-${round}`))) {
          for (const [name, text] of Object.entries(content)) nodes[node].artifacts[name] = await admin.putBlob(text);
        }
        const r = await admin.post('/v1/publishes', { message: `replicas: round ${round}`, nodes });
        if (r.status === 201) acknowledged.push(r.body);
        else unacknowledged.push(`round ${round}: ${r.status} ${r.text.slice(0, 200)}`);
      } catch (err) {
        unacknowledged.push(`round ${round}: ${(err as Error).message}`);
      }
    };

    for (let i = 0; i < 5; i++) await publishRound();
    // Kill the replica writing the mirror, so the survivor must take the mirror over too.
    const states = await Promise.all(replicas.map((r) => new Client(r.url).get('/readyz')));
    const victimIndex = states.findIndex((s) => s.body.mirror.state === 'writing');
    // One replica holds the writer's lock; failing, the states say what each replica's mirror was doing.
    expect(states.map((s) => s.body.mirror)).toContainEqual(expect.objectContaining({ state: 'writing' }));
    const victim = replicas[victimIndex];
    const survivor = replicas[1 - victimIndex];
    // Mid-publish: the kill lands while a publish is in flight through the proxy.
    const inFlight = publishRound();
    await sleep(5);
    victim.child.kill('SIGKILL');
    killed = true;
    await waitForExit(victim.child, 'the killed replica');
    await inFlight;
    const errorsAtKill = polls.errors;
    for (let i = 0; i < 8; i++) await publishRound();
    await sleep(1500);
    polling = false;
    await poller;
    process.stdout.write(
      `replicas: ${acknowledged.length} publishes acknowledged, ${unacknowledged.length} not (${unacknowledged.join('; ') || 'none'}); ` +
        `polls through the proxy: ${polls.ok} answered, ${polls.errors} errors (${errorsAtKill} of them by the time the killed replica was gone), ${polls.okAfterKill} answered after the kill\n`,
    );

    // Polls kept answering after the kill, through the survivor.
    expect(polls.okAfterKill).toBeGreaterThan(0);
    // The survivor answers for the whole fleet: every acknowledged publish is in the ledger, and the chain holds.
    const reader = new Client(survivor.url, replicas[0].adminToken);
    expect(acknowledged.length).toBeGreaterThanOrEqual(10);
    for (const p of acknowledged) {
      const r = await reader.get(`/v1/publishes/${p.publish_id}`);
      expect({ id: p.publish_id, status: r.status, position: r.body?.position }).toEqual({ id: p.publish_id, status: 200, position: p.position });
    }
    const verify = await reader.post('/v1/ledger/verify');
    expect(verify.body).toEqual(expect.objectContaining({ ok: true }));

    // Every agent ends on its node's newest version, which it fetched through the proxy from the survivor.
    const head = (await reader.get('/v1/nodes')).body.items as { node: string; version: number }[];
    const latest = Object.fromEntries(head.map((i) => [i.node, i.version]));
    const lastAck = acknowledged[acknowledged.length - 1];
    for (const c of lastAck.changed) expect(latest[c.node]).toBeGreaterThanOrEqual(c.to);
    for (const node of NODES) {
      await waitFor(`${node} to apply version ${latest[node]}`, async () => (await socketStatus(files[node])).active_version === latest[node], 60_000);
    }

    // The survivor took the audit mirror over (its own data dir starts empty) and brought it to the ledger's head.
    const ready = await waitFor(
      'the survivor to write the mirror to the head',
      async () => {
        const r = await new Client(survivor.url).get('/readyz');
        return r.body.mirror.state === 'writing' && r.body.mirror.lag === 0 ? r.body : undefined;
      },
      60_000,
    );
    expect(ready.mirror.position).toBe(ready.ledger_position);
    const withMirror = await reader.post('/v1/ledger/verify?mirror=true');
    expect(withMirror.body).toEqual(expect.objectContaining({ ok: true }));
    const metrics = await reader.get('/metrics');
    expect(metrics.text).toMatch(/^florete_mirror_lag_positions 0$/m);
    expect(metrics.text).toMatch(/^florete_mirror_writing 1$/m);
  });
});
