import { execFile, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import { spkiPin } from '#tls';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import type { Client } from './support/http.js';
import { RETECTL, runRetectl } from './support/retectl-process.js';
import { ThrowawayCa, TlsClient, type Issued } from './support/tls.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  FLOR,
  flor,
  florJson,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';
import { stopChild } from './support/child.js';

jest.setTimeout(300_000);

const run = promisify(execFile);
const COORDINATOR = resolve('dist/apps/coordinator/src/main.js');
const PROBE = resolve('test/fixtures/tls/connect-probe.mjs');
const fingerprintOf = (issued: Issued) => new X509Certificate(issued.certPem).fingerprint256;

/** The cert and key replaced the way an ACME client does it: written aside, then renamed over the served files. */
function replacePair(dir: string, certPem: string, keyPem: string): void {
  writeFileSync(join(dir, 'cert.pem.new'), certPem);
  writeFileSync(join(dir, 'key.pem.new'), keyPem, { mode: 0o600 });
  renameSync(join(dir, 'key.pem.new'), join(dir, 'key.pem'));
  renameSync(join(dir, 'cert.pem.new'), join(dir, 'cert.pem'));
}

/** A TLS server that records every connection and every byte a client manages to send over TLS. */
interface Recorder {
  readonly url: string;
  connections: number;
  readonly received: Buffer[];
  /** Resolves once every connection it accepted is closed: nothing more can arrive. */
  drained(): Promise<void>;
  close(): Promise<void>;
}

async function recordingServer(issued: Issued): Promise<Recorder> {
  let open = 0;
  const server: TlsServer = createTlsServer({ cert: issued.certPem, key: issued.keyPem });
  const recorder: Recorder = {
    url: '',
    connections: 0,
    received: [],
    drained: () => waitFor('the recording server to see its connections closed', async () => open === 0, 20_000, 20).then(() => undefined),
    close: () => new Promise((r) => server.close(() => r())),
  };
  server.on('connection', (socket) => {
    recorder.connections += 1;
    open += 1;
    socket.on('close', () => (open -= 1));
  });
  server.on('tlsClientError', () => undefined);
  server.on('secureConnection', (socket) => {
    socket.on('data', (chunk: Buffer) => recorder.received.push(chunk));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  (recorder as { url: string }).url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return recorder;
}

/** The coordinator run to its end: for starts it must refuse. */
function coordinatorExit(env: Record<string, string>): Promise<{ code: number; stderr: string; stdout: string }> {
  return new Promise((done) => {
    const vars: Record<string, string | undefined> = { ...process.env, PORT: '0', FLORETE_LOG_LEVEL: 'warn', ...env };
    delete vars.NODE_OPTIONS;
    delete vars.DATABASE_URL;
    execFile(process.execPath, [COORDINATOR, 'serve'], { env: vars, timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

describe('the coordinator over HTTPS, and the clients that verify it', () => {
  let work: string;
  let certDir: string;
  let ca: ThrowawayCa;
  let caFile: string;
  let served: Issued;
  let coordinator: CoordinatorProcess;
  let admin: TlsClient;
  let fleet: Fleet;
  let pinA: string;
  let alpha: AgentFiles;

  const enrolmentToken = async (node: string): Promise<string> => fleet.enrolmentToken(node);
  const newConnection = () => new TlsClient(coordinator.url, ca.certPem);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'florete-tls-'));
    certDir = join(work, 'tls');
    mkdirSync(certDir);
    ca = await ThrowawayCa.create('florete test CA');
    caFile = join(work, 'ca.pem');
    writeFileSync(caFile, ca.certPem);
    served = await ca.issue();
    pinA = spkiPin(served.certPem);
    replacePair(certDir, served.certPem, served.keyPem);
    coordinator = await startCoordinatorProcess({ env: { FLORETE_TLS_CERT: join(certDir, 'cert.pem'), FLORETE_TLS_KEY: join(certDir, 'key.pem') } });
    admin = new TlsClient(coordinator.url, ca.certPem, coordinator.adminToken);
    fleet = new Fleet(admin as unknown as Client);
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') } });
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (alpha) removeTree(alpha.root);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('serves HTTPS on loopback, and its enrolment tokens carry the pin of its TLS key', async () => {
    expect(coordinator.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const listening = coordinator.output.map((l) => (l.startsWith('{') ? JSON.parse(l) : {})).find((l) => l.msg === 'coordinator listening');
    expect(listening.tls).toEqual({ subject: 'CN=florete coordinator', fingerprint: fingerprintOf(served), valid_to: expect.any(String), pin: pinA });
    const token = await enrolmentToken('alpha');
    const parts = token.split('.');
    expect(parts).toHaveLength(5);
    expect(parts[4]).toBe(pinA);
    // The pin is the one openssl and every tool compute: sha256 over the certificate's DER SubjectPublicKeyInfo.
    const { stdout } = await run('sh', [
      '-c',
      `openssl x509 -pubkey -noout -in ${join(certDir, 'cert.pem')} | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | basenc --base64url | tr -d =`,
    ]);
    expect(stdout.trim()).toBe(pinA);
  });

  it('enrols a node by the pin alone (its CA is in no store the node trusts), and the node syncs through the pinned key', async () => {
    alpha = agentFiles('none');
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await enrolmentToken('alpha'), ...alpha.args]);
    expect(enrolled).toMatchObject({ code: 0, stderr: '' });
    expect(enrolled.stdout).toMatch(new RegExp(`^enrolled alpha with ${coordinator.url}; pinned key \\S+; pinned TLS key sha256 ${pinA}; identity in `));
    expect(JSON.parse(readFileSync(join(alpha.stateDir, 'identity.json'), 'utf8'))).toMatchObject({ coordinator: coordinator.url, tls_pin: pinA });
    await startAgent(alpha);
    await waitFor('alpha applies version 1', async () => (await socketStatus(alpha)).applied_version === 1);
  });

  describe('a server that is not the coordinator gets no secret', () => {
    let rogueCa: ThrowawayCa;
    let rogue: Recorder;
    let roguePin: string;

    beforeAll(async () => {
      rogueCa = await ThrowawayCa.create('someone else');
      const cert = await rogueCa.issue(undefined, 'not the coordinator');
      roguePin = spkiPin(cert.certPem);
      writeFileSync(join(work, 'rogue-ca.pem'), rogueCa.certPem);
      rogue = await recordingServer(cert);
    });
    afterAll(() => rogue?.close());

    const nothingReceived = async (connectionsBefore: number) => {
      await rogue.drained();
      // The client did connect and start a handshake (it had the server's certificate to judge), and
      // the server got nothing out of it: a client that wrote its request would have finished the handshake.
      expect(rogue.connections).toBeGreaterThan(connectionsBefore);
      expect(Buffer.concat(rogue.received).toString('latin1')).toBe('');
    };

    it('flor agent enroll: a key other than the pinned one is refused, even with a CA that vouches for it', async () => {
      const token = await enrolmentToken('beta');
      for (const extra of [[], ['--cacert', join(work, 'rogue-ca.pem')]]) {
        const before = rogue.connections;
        const files = agentFiles('none');
        const r = await flor(['agent', 'enroll', '--coordinator', rogue.url, '--token', token, ...extra, ...files.args]);
        expect(r.code).toBe(1);
        expect(r.stderr).toBe(
          `flor: ${rogue.url.slice('https://'.length)} is not the coordinator the enrolment token names: its key's sha256 pin is ${roguePin}, the token pins ${pinA}; wrong address, or something in between; nothing was sent\n`,
        );
        await nothingReceived(before);
        removeTree(files.root);
      }
      // The token never left the node: it still enrols beta at the real coordinator.
      const files = agentFiles('none');
      expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, ...files.args])).code).toBe(0);
      removeTree(files.root);
    });

    it('the agent: a server neither chaining to a trusted CA nor showing the pinned key never sees the node credential', async () => {
      const lost = agentFiles('none');
      cpSync(alpha.stateDir, lost.stateDir, { recursive: true, filter: (path) => !path.endsWith('.sock') });
      const identityPath = join(lost.stateDir, 'identity.json');
      writeFileSync(identityPath, JSON.stringify({ ...JSON.parse(readFileSync(identityPath, 'utf8')), coordinator: rogue.url }), { mode: 0o600 });
      const before = rogue.connections;
      const agent = await startAgent(lost);
      const s = await waitFor('the pass at start', async () => {
        const status = await socketStatus(lost);
        return status.last_error ? status : undefined;
      });
      expect(s.last_error).toMatch(
        new RegExp(
          `^refused 127\\.0\\.0\\.1:\\d+: its certificate is not trusted \\([A-Z_]+; trusted CAs: the system store \\([^)]*\\)\\) and its key's sha256 pin is ${roguePin}, not the pinned ${pinA}; nothing was sent$`,
        ),
      );
      await agent.stop();
      await nothingReceived(before);
      removeTree(lost.root);
    });

    it('retectl: a certificate from a CA other than the one given is refused before the token is written', async () => {
      const before = rogue.connections;
      const r = await runRetectl(['status', '--coordinator', rogue.url, '--token', coordinator.adminToken!, '--cacert', caFile]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `retectl: refused ${rogue.url.slice('https://'.length)}: its certificate is not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE; trusted CAs: the CA file ${caFile}); nothing was sent: check that --cacert names the CA of ${rogue.url}\n`,
      );
      await nothingReceived(before);
    });
  });

  it('retectl trusts the system store unless given a CA file (--cacert or ca_file in its config)', async () => {
    const home = join(work, 'retectl-home');
    const env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config') };
    const refused = await runRetectl(['status', '--coordinator', coordinator.url, '--token', coordinator.adminToken!], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^retectl: refused 127\.0\.0\.1:\d+: its certificate is not trusted \(UNABLE_TO_VERIFY_LEAF_SIGNATURE; trusted CAs: the system store \(.*\)\); nothing was sent: give its CA with --cacert FILE or `retectl config set ca_file FILE`\n$/,
    );
    const flag = await runRetectl(['status', '--coordinator', coordinator.url, '--token', coordinator.adminToken!, '--cacert', caFile], { env });
    expect(flag).toMatchObject({ code: 0, stderr: '' });
    expect(flag.stdout).toMatch(/^alpha\b/m);
    expect((await runRetectl(['config', 'set', 'ca_file', caFile], { env })).code).toBe(0);
    expect((await runRetectl(['config', 'show'], { env })).stdout).toMatch(new RegExp(`\\nca_file: ${caFile}\\n$`));
    expect((await runRetectl(['status', '--coordinator', coordinator.url, '--token', coordinator.adminToken!], { env })).code).toBe(0);
    const bad = await runRetectl(['config', 'set', 'ca_file', join(work, 'missing.pem')], { env });
    expect(bad).toMatchObject({ code: 2, stderr: `retectl: ca_file ${join(work, 'missing.pem')} cannot be read: ENOENT\n` });
  });

  it('the git CLI clones the audit mirror over HTTPS with the CA given as http.sslCAInfo, and refuses without it', async () => {
    const reader = (await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token as string;
    const url = new URL('/audit.git', coordinator.url);
    url.username = 'auditor';
    url.password = reader;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '/bin/false',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    };
    // These would beat http.sslCAInfo (or turn verification off): the machine's own are not the auditor's.
    for (const name of ['GIT_SSL_CAINFO', 'GIT_SSL_CAPATH', 'GIT_SSL_NO_VERIFY']) delete env[name];
    await waitFor('the mirror to catch up', async () => (await admin.get('/readyz')).body.mirror.lag === 0);
    const refused = await run('git', ['clone', '--quiet', url.toString(), join(work, 'refused')], { env }).then(
      () => 'cloned',
      (err: { stderr: string }) => err.stderr,
    );
    expect(refused).toMatch(/server certificate verification failed|certificate problem|SSL certificate/i);
    await run('git', ['-c', `http.sslCAInfo=${caFile}`, 'clone', '--quiet', url.toString(), join(work, 'clone')], { env });
    expect((await run('git', ['-C', join(work, 'clone'), 'log', '--format=%s', '--', 'alpha/'], { env })).stdout).toBe('agent test\n');
    expect(readFileSync(join(work, 'clone', 'alpha', 'mgmt', 'VERSION'), 'utf8')).toBe('1\n');
  });

  it('retectl audit verify --cacert clones the mirror trusting that CA, even where GIT_SSL_CAINFO names another bundle', async () => {
    // Machines that set GIT_SSL_CAINFO to the system bundle exist (CI images, corporate setups); the
    // environment variable beats git's http.sslCAInfo, so the test sets it as such a machine does.
    const systemBundle = '/etc/ssl/certs/ca-certificates.crt';
    let otherBundle = systemBundle;
    if (!existsSync(systemBundle)) {
      otherBundle = join(work, 'other-bundle.pem');
      writeFileSync(otherBundle, (await ThrowawayCa.create('some other CA')).certPem);
    }
    const connection = ['--coordinator', coordinator.url, '--token', coordinator.adminToken!, '--cacert', caFile];
    const checkpoint = await runRetectl(['audit', 'checkpoint', ...connection]);
    expect(checkpoint).toMatchObject({ code: 0, stderr: '' });
    const kept = join(work, 'kept-checkpoint.txt');
    writeFileSync(kept, checkpoint.stdout);
    await waitFor('the mirror to catch up', async () => (await admin.get('/readyz')).body.mirror.lag === 0);

    const verify = await runRetectl(['audit', 'verify', '--checkpoint', kept, '--json', ...connection], {
      env: { GIT_SSL_CAINFO: otherBundle, GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(verify.stderr).toBe('');
    // The kept position may be a token's, which the mirror does not record; the clone read its publishes.
    const verdict = JSON.parse(verify.stdout);
    expect(verdict).toMatchObject({ ok: true, ledger: { agrees: true }, mirror: { first_disagreement: null }, disagreements: [] });
    expect(verdict.mirror.commits).toBeGreaterThan(0);
    expect(verify.code).toBe(0);
  });

  describe('a certificate replaced on disk', () => {
    let keptAlive: TlsClient;
    let firstSocket: unknown;

    beforeAll(async () => {
      keptAlive = new TlsClient(coordinator.url, ca.certPem, undefined, new Agent({ ca: ca.certPem, keepAlive: true, maxSockets: 1 }));
      const r = await keptAlive.get('/healthz');
      expect(r.fingerprint).toBe(fingerprintOf(served));
      firstSocket = r.socket;
    });
    afterAll(() => keptAlive?.agent?.destroy());

    /**
     * Waits until a new connection is served `issued`; the connection kept open from before was closed
     * by the coordinator (it was made under the previous certificate, which its client judged), so the
     * client's next request goes on a new connection, under the new one.
     */
    const servedToNewConnections = async (issued: Issued) => {
      await waitFor(
        'the new certificate on new connections',
        async () => (await newConnection().get('/healthz')).fingerprint === fingerprintOf(issued),
        20_000,
        50,
      );
      const again = await keptAlive.get('/healthz');
      expect({ status: again.status, sameConnection: again.socket === firstSocket, fingerprint: again.fingerprint }).toEqual({
        status: 200,
        sameConnection: false,
        fingerprint: fingerprintOf(issued),
      });
      firstSocket = again.socket;
    };

    it('renewed with the same key: served to new connections, the pin unchanged, the pinned node still syncs', async () => {
      const renewed = await ca.issue(served.keys);
      expect(fingerprintOf(renewed)).not.toBe(fingerprintOf(served));
      replacePair(certDir, renewed.certPem, renewed.keyPem);
      await servedToNewConnections(renewed);
      expect((await enrolmentToken('gamma')).split('.')[4]).toBe(pinA);
      await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'two') } });
      expect(await flor(['agent', 'sync', ...alpha.args])).toMatchObject({ code: 0, stdout: 'applied 2 (was 1)\n' });
    });

    it('with a new key: new tokens carry its pin; a node that trusts only the old pin refuses it, one given the CA file syncs', async () => {
      const rekeyed = await ca.issue();
      const pinB = spkiPin(rekeyed.certPem);
      replacePair(certDir, rekeyed.certPem, rekeyed.keyPem);
      await servedToNewConnections(rekeyed);
      expect((await enrolmentToken('gamma')).split('.')[4]).toBe(pinB);
      expect(coordinator.output.some((l) => l.includes('"tls: certificate with a new key served to new connections') && l.includes(pinB))).toBe(true);

      await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'three') } });
      const refused = await flor(['agent', 'sync', ...alpha.args]);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(
        new RegExp(
          `^error: refused 127\\.0\\.0\\.1:\\d+: its certificate is not trusted \\(UNABLE_TO_VERIFY_LEAF_SIGNATURE; .*\\) and its key's sha256 pin is ${pinB}, not the pinned ${pinA}; nothing was sent\\n$`,
        ),
      );

      await stopAllAgents();
      const config = JSON.parse(readFileSync(alpha.configPath, 'utf8'));
      writeFileSync(alpha.configPath, JSON.stringify({ ...config, tls: { ca_file: caFile } }));
      await startAgent(alpha);
      await waitFor('alpha applies version 3 through the CA file', async () => (await socketStatus(alpha)).applied_version === 3);
      served = rekeyed;
    });

    it('a pair that does not belong together is logged and the served certificate kept', async () => {
      const stranger = await ca.issue();
      const warnings = () => coordinator.output.filter((l) => l.includes('cannot be served; still serving the previous certificate')).length;
      const before = warnings();
      replacePair(certDir, stranger.certPem, served.keyPem);
      await waitFor('the warning', async () => warnings() > before, 20_000, 50);
      expect(coordinator.output.filter((l) => l.includes('cannot be served')).at(-1)).toMatch(
        /FLORETE_TLS_KEY \S+key\.pem is not the key of the certificate in \S+cert\.pem/,
      );
      expect((await newConnection().get('/healthz')).fingerprint).toBe(fingerprintOf(served));
      expect(coordinator.child.exitCode).toBeNull();
    });
  });
});

describe('plain HTTP off this machine', () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'florete-cleartext-'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('the coordinator refuses to listen on a non-loopback address without TLS, naming both ways to turn it on', async () => {
    const r = await coordinatorExit({ HOST: '0.0.0.0', FLORETE_DATA: join(work, 'data') });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'coordinator: HOST 0.0.0.0 is not a loopback address, and without TLS the API tokens, enrolment tokens and node credentials would cross the network in clear. ' +
        'Either give the coordinator a certificate (FLORETE_TLS_CERT and FLORETE_TLS_KEY, PEM files), or put a TLS-terminating proxy in front and say so with FLORETE_TLS=proxy (FLORETE_TRUSTED_PROXIES: its addresses, for X-Forwarded-For)\n',
    );
    expect(r.stdout).toBe('');
  });

  it('the coordinator names a certificate it cannot serve, and a half-given pair', async () => {
    writeFileSync(join(work, 'cert.pem'), 'not a certificate\n');
    const bad = await coordinatorExit({ FLORETE_TLS_CERT: join(work, 'cert.pem'), FLORETE_TLS_KEY: join(work, 'key.pem'), FLORETE_DATA: join(work, 'data') });
    expect(bad).toMatchObject({ code: 1, stderr: `coordinator: FLORETE_TLS_KEY ${join(work, 'key.pem')} cannot be read: ENOENT\n` });
    const half = await coordinatorExit({ FLORETE_TLS_CERT: join(work, 'cert.pem'), FLORETE_DATA: join(work, 'data') });
    expect(half).toMatchObject({
      code: 1,
      stderr: 'coordinator: invalid environment: FLORETE_TLS_CERT is set without FLORETE_TLS_KEY: give both the certificate and its key (PEM files)\n',
    });
  });

  /**
   * The CLIs run in a network namespace of their own (nothing they send can leave it), with a probe
   * that records every connection attempt and name lookup: the refusal must come before any.
   */
  const isolated = (args: readonly string[], probeLog: string): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) => {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent', FLORETE_CONNECT_LOG: probeLog };
      execFile('unshare', ['--net', '--', process.execPath, '--import', PROBE, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
        done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  const attempts = (probeLog: string): string[] => {
    try {
      return readFileSync(probeLog, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  const ENROL_TOKEN = `fle.${'0'.repeat(18)}.${'A'.repeat(43)}.${'B'.repeat(43)}`;
  const API_TOKEN = `flt.${'0'.repeat(18)}.${'A'.repeat(43)}`;

  it('flor agent enroll and retectl refuse before any connection or lookup, saying why and how to allow it', async () => {
    const cases = [
      {
        args: [FLOR, 'agent', 'enroll', '--coordinator', 'http://192.0.2.1:8080', '--token', ENROL_TOKEN, '--state-dir', join(work, 'state')],
        who: 'flor',
        secret: 'enrolment token',
        origin: 'http://192.0.2.1:8080',
        how: 'pass --insecure-http',
      },
      {
        args: [FLOR, 'agent', 'enroll', '--coordinator', 'http://coordinator.example:8080', '--token', ENROL_TOKEN, '--state-dir', join(work, 'state')],
        who: 'flor',
        secret: 'enrolment token',
        origin: 'http://coordinator.example:8080',
        how: 'pass --insecure-http',
      },
      {
        args: [RETECTL, 'status', '--coordinator', 'http://192.0.2.1:8080', '--token', API_TOKEN],
        who: 'retectl',
        secret: 'API token',
        origin: 'http://192.0.2.1:8080',
        how: 'pass --insecure-http (or run `retectl config set insecure_http true`)',
      },
      {
        args: [RETECTL, 'token', 'create', 'alpha', '--coordinator', 'http://coordinator.example', '--token', API_TOKEN],
        who: 'retectl',
        secret: 'API token',
        origin: 'http://coordinator.example',
        how: 'pass --insecure-http (or run `retectl config set insecure_http true`)',
      },
    ];
    for (const [i, c] of cases.entries()) {
      const probe = join(work, `probe-${i}.log`);
      const r = await isolated(c.args, probe);
      const host = new URL(c.origin).hostname;
      expect({ i, code: r.code, stderr: r.stderr }).toEqual({
        i,
        code: 2,
        stderr: `${c.who}: refusing to send the ${c.secret} to ${c.origin} over plain http: anyone on the network path could read it and use it. Use an https:// URL, or ${c.how} if the path to ${host} is trusted; nothing was sent\n`,
      });
      expect({ i, attempts: attempts(probe) }).toEqual({ i, attempts: [] });
    }
  });

  it('with --insecure-http they do try (the probe sees it: nothing leaves the namespace)', async () => {
    const probe = join(work, 'probe-insecure.log');
    const r = await isolated([RETECTL, 'status', '--coordinator', 'http://192.0.2.1:8080', '--token', API_TOKEN, '--insecure-http'], probe);
    expect(r).toMatchObject({ code: 1, stderr: 'retectl: cannot reach the coordinator at http://192.0.2.1:8080: ENETUNREACH\n' });
    expect(attempts(probe).map((l) => JSON.parse(l))).toContainEqual({ connect: expect.objectContaining({ host: '192.0.2.1', port: 8080 }) });
    const enrol = await isolated(
      [
        FLOR,
        'agent',
        'enroll',
        '--coordinator',
        'http://192.0.2.1:8080',
        '--token',
        `fle.${'0'.repeat(18)}.${'A'.repeat(43)}.${'B'.repeat(43)}`,
        '--insecure-http',
        '--state-dir',
        join(work, 'state'),
      ],
      join(work, 'probe-insecure-flor.log'),
    );
    expect(enrol.code).toBe(1);
    expect(enrol.stderr).toMatch(/^flor: cannot reach http:\/\/192\.0\.2\.1:8080: .*ENETUNREACH/);
  });

  it('the agent daemon keeps the node credential off plain http to another machine unless its config says so', async () => {
    const files = agentFiles('none');
    const identity = {
      coordinator: 'http://192.0.2.1:8080',
      node: 'alpha',
      credential: `fln.${'0'.repeat(18)}.${'A'.repeat(43)}`,
      pinned_jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'A'.repeat(43), kid: 'k', alg: 'EdDSA', use: 'sig' }] },
      enrolled_at: new Date().toISOString(),
    };
    writeFileSync(join(files.stateDir, 'identity.json'), JSON.stringify(identity), { mode: 0o600 });
    const probe = join(work, 'probe-daemon.log');
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent', FLORETE_CONNECT_LOG: probe, FLORETE_LOG_LEVEL: 'warn' };
    const child = spawn('unshare', ['--net', '--', process.execPath, '--import', PROBE, FLOR, 'agent', 'run', ...files.args], { env, stdio: 'ignore' });
    try {
      const s = await waitFor('the pass at start', async () => (await socketStatus(files).catch(() => undefined))?.last_error ?? undefined);
      expect(s).toBe(
        'refusing to send the node credential to http://192.0.2.1:8080 over plain http: anyone on the network path could read it and use it. Use an https:// URL, or set insecure_http: true in the agent config (or enrol with --insecure-http) if the path to 192.0.2.1 is trusted; nothing was sent',
      );
      expect(attempts(probe)).toEqual([]);
    } finally {
      await stopChild(child, 'the agent');
      removeTree(files.root);
    }
  });
});

describe('behind a TLS-terminating proxy (FLORETE_TLS=proxy)', () => {
  const started: CoordinatorProcess[] = [];
  afterAll(async () => {
    for (const c of started) await c.stop();
  });

  /** Anonymous /healthz with an X-Forwarded-For: the rate limit (2 a minute here) counts per client address. */
  const healthz = async (url: string, forwardedFor: string) => (await fetch(new URL('/healthz', url), { headers: { 'x-forwarded-for': forwardedFor } })).status;
  const clientsLogged = (c: CoordinatorProcess) =>
    c.output
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request' && l.path === '/healthz')
      .map((l) => l.client as string);

  it('takes the client address from X-Forwarded-For when the request comes from a configured proxy, and issues tokens without a pin', async () => {
    const c = await startCoordinatorProcess({ env: { FLORETE_TLS: 'proxy', FLORETE_TRUSTED_PROXIES: '127.0.0.1, ::1', FLORETE_ANON_RATE_LIMIT: '2' } });
    started.push(c);
    expect(c.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect([
      await healthz(c.url, '198.51.100.1'),
      await healthz(c.url, '198.51.100.1'),
      await healthz(c.url, '198.51.100.1'),
      await healthz(c.url, '198.51.100.2'),
    ]).toEqual([200, 200, 429, 200]);
    await waitFor('the request log lines', async () => clientsLogged(c).length === 4);
    expect(clientsLogged(c)).toEqual(['198.51.100.1', '198.51.100.1', '198.51.100.1', '198.51.100.2']);
    const token = await new Fleet(new (await import('./support/http.js')).Client(c.url, c.adminToken)).enrolmentToken('alpha');
    expect(token.split('.')).toHaveLength(4);
  });

  it('ignores X-Forwarded-For from any other address', async () => {
    const c = await startCoordinatorProcess({ env: { FLORETE_TLS: 'proxy', FLORETE_TRUSTED_PROXIES: '192.0.2.9/32', FLORETE_ANON_RATE_LIMIT: '2' } });
    started.push(c);
    expect([await healthz(c.url, '198.51.100.1'), await healthz(c.url, '198.51.100.2'), await healthz(c.url, '198.51.100.3')]).toEqual([200, 200, 429]);
    await waitFor('the request log lines', async () => clientsLogged(c).length === 3);
    expect(clientsLogged(c)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('refuses a proxy list that is not addresses, and one given without FLORETE_TLS=proxy', async () => {
    const data = join(tmpdir(), 'florete-never-created');
    expect(await coordinatorExit({ FLORETE_TLS: 'proxy', FLORETE_TRUSTED_PROXIES: '10.0.0.0/33', FLORETE_DATA: data })).toMatchObject({
      code: 1,
      stderr:
        'coordinator: invalid environment: FLORETE_TRUSTED_PROXIES: "10.0.0.0/33" is not an IP address or CIDR (such as 10.0.0.5, 10.0.0.0/24 or fd00::/64)\n',
    });
    expect(await coordinatorExit({ FLORETE_TRUSTED_PROXIES: '10.0.0.1', FLORETE_DATA: data })).toMatchObject({
      code: 1,
      stderr: 'coordinator: invalid environment: FLORETE_TRUSTED_PROXIES is set without FLORETE_TLS=proxy: X-Forwarded-For is believed only behind a proxy\n',
    });
  });
});
