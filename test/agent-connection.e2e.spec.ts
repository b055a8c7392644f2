import { readFileSync, renameSync, rmSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { spkiPin } from '#tls';
import type { AgentIdentity } from '#contracts';
import { CoordinatorClient } from '../apps/flor/src/agent/coordinator-client.js';
import { coordinatorHandshakes, dropCoordinatorAgent, type Transport } from '../apps/flor/src/agent/transport.js';
import { AgentError } from '../apps/flor/src/errors.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import type { Client } from './support/http.js';
import { ThrowawayCa, TlsClient, type Issued } from './support/tls.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, waitFor, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

/**
 * A TCP relay in front of the coordinator, standing where the network (or a proxy) stands: it
 * counts the connections the agent opens, can close them all as a server closing idle connections
 * does, can reset the next connection a request arrives on, and can be pointed at another server.
 */
interface Relay {
  readonly url: string;
  connections: number;
  target: number;
  /** Set: the next chunk a client sends on a connection that already carried a request is answered with a reset. */
  resetNextReused: boolean;
  cutAll(): void;
  close(): Promise<void>;
}

async function startRelay(target: number): Promise<Relay> {
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    relay.connections += 1;
    const outbound = createConnection({ host: '127.0.0.1', port: relay.target });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    let requests = 0;
    let lastFromServer = 0;
    inbound.on('data', (chunk: Buffer) => {
      // A client's application data after the server has answered once: a request on a kept-alive connection.
      if (lastFromServer > 0 && relay.resetNextReused && Date.now() - lastFromServer > 50) {
        relay.resetNextReused = false;
        inbound.resetAndDestroy();
        outbound.destroy();
        return;
      }
      requests += 1;
      outbound.write(chunk);
    });
    outbound.on('data', (chunk: Buffer) => {
      if (requests > 0) lastFromServer = Date.now();
      inbound.write(chunk);
    });
    inbound.on('end', () => outbound.end());
    outbound.on('end', () => inbound.end());
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  const relay: Relay = {
    url: '',
    connections: 0,
    target,
    resetNextReused: false,
    cutAll: () => {
      for (const s of open) s.destroy();
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  };
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  (relay as { url: string }).url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return relay;
}

const settle = () => new Promise((r) => setTimeout(r, 200));

describe("the agent's connection to its coordinator", () => {
  let work: string;
  let ca: ThrowawayCa;
  let served: Issued;
  let coordinator: CoordinatorProcess;
  let relay: Relay;
  let identity: AgentIdentity;
  let files: AgentFiles;
  let transport: Transport;

  /** A client as a pass builds it: a new one each time, to the relay. */
  const client = (t: Transport = transport) => new CoordinatorClient({ ...identity, coordinator: relay.url }, 10_000, t);
  const poll = async (t?: Transport) => {
    const r = await client(t).fetchBundle(null);
    expect(r.status).toBe(200);
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'florete-agent-conn-'));
    ca = await ThrowawayCa.create('florete test CA');
    served = await ca.issue();
    writeFileSync(join(work, 'cert.pem'), served.certPem);
    writeFileSync(join(work, 'key.pem'), served.keyPem, { mode: 0o600 });
    coordinator = await startCoordinatorProcess({ env: { FLORETE_TLS_CERT: join(work, 'cert.pem'), FLORETE_TLS_KEY: join(work, 'key.pem') } });
    const fleet = new Fleet(new TlsClient(coordinator.url, ca.certPem, coordinator.adminToken) as unknown as Client);
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') } });
    files = agentFiles('none');
    // Enrolled by the token's pin alone: the CA is in no store the agent trusts.
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('alpha'), ...files.args]);
    expect(enrolled).toMatchObject({ code: 0, stderr: '' });
    identity = JSON.parse(readFileSync(join(files.stateDir, 'identity.json'), 'utf8')) as AgentIdentity;
    expect(identity.tls_pin).toBe(spkiPin(served.certPem));
    transport = { pin: identity.tls_pin, insecureHttp: false };
    relay = await startRelay(Number(new URL(coordinator.url).port));
  });

  afterAll(async () => {
    dropCoordinatorAgent();
    await relay?.close();
    await coordinator?.stop();
    if (files) removeTree(files.root);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('keeps one connection from poll to poll, each poll with a new client as passes make them', async () => {
    for (let i = 0; i < 5; i++) await poll();
    expect(relay.connections).toBe(1);
    expect(coordinatorHandshakes()).toEqual({ full: 1, resumed: 0 });
  });

  it('resumes the TLS session on a new connection once the server closed the kept one', async () => {
    relay.cutAll();
    await settle();
    await poll();
    expect(relay.connections).toBe(2);
    expect(coordinatorHandshakes()).toEqual({ full: 1, resumed: 1 });
  });

  it('asks a GET again, once, on a new connection when the kept one is reset as the request goes out', async () => {
    await settle();
    relay.resetNextReused = true;
    await poll();
    expect(relay.resetNextReused).toBe(false);
    expect(relay.connections).toBe(3);
    expect(coordinatorHandshakes()).toEqual({ full: 1, resumed: 2 });
  });

  it('does not ask a watch again: one cut is watched again by the daemon, after its random delay', async () => {
    const first = await client().fetchBundle(null);
    expect(first.status).toBe(200);
    const etag = first.status === 200 ? first.etag : null;
    await settle();
    const before = relay.connections;
    relay.resetNextReused = true;
    const err = await client()
      .fetchBundle(etag, 5)
      .catch((e: unknown) => e);
    expect(relay.resetNextReused).toBe(false);
    expect((err as AgentError).code).toBe('unreachable');
    expect(relay.connections).toBe(before);
  });

  it('closes a connection left unused past its idle time, and resumes on the next', async () => {
    const before = relay.connections;
    await new Promise((r) => setTimeout(r, 4_500));
    await poll();
    expect(relay.connections).toBe(before + 1);
    expect(coordinatorHandshakes()?.resumed).toBe(3);
  });

  describe('a session that could be resumed admits nothing the policy would refuse', () => {
    let rogue: HttpsServer;
    let received: number;
    beforeAll(async () => {
      const other = await (await ThrowawayCa.create('someone else')).issue(undefined, 'not the coordinator');
      received = 0;
      rogue = createHttpsServer({ cert: other.certPem, key: other.keyPem }, (req, res) => {
        received += 1;
        res.end('{}');
      });
      rogue.on('tlsClientError', () => undefined);
      await new Promise<void>((r) => rogue.listen(0, '127.0.0.1', () => r()));
    });
    afterAll(() => new Promise<void>((r) => rogue.close(() => r())));

    it('another server at the address (another key, another certificate) is refused, though the agent holds a session for it', async () => {
      relay.target = (rogue.address() as AddressInfo).port;
      relay.cutAll();
      await settle();
      const err = await client()
        .fetchBundle(null)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      expect((err as AgentError).code).toBe('tls_untrusted');
      expect((err as AgentError).message).toMatch(/its certificate is not trusted .* not the pinned /);
      expect(received).toBe(0);
      // The session that led there is dropped: the coordinator, back at the address, is judged on a full handshake.
      relay.target = Number(new URL(coordinator.url).port);
      const before = coordinatorHandshakes()!;
      await poll();
      expect(coordinatorHandshakes()).toEqual({ full: before.full + 1, resumed: before.resumed });
    });

    it('a changed pin is judged on a new agent: the coordinator it held a session with is refused', async () => {
      relay.cutAll();
      await settle();
      const wrongPin = spkiPin((await ca.issue()).certPem);
      const err = await client({ pin: wrongPin, insecureHttp: false })
        .fetchBundle(null)
        .catch((e: unknown) => e);
      expect((err as AgentError).code).toBe('tls_untrusted');
      expect((err as AgentError).message).toContain(`not the pinned ${wrongPin}`);
      // No session was offered by the new agent: its one handshake was a full one, and it failed.
      expect(coordinatorHandshakes()).toEqual({ full: 0, resumed: 0 });
    });

    it("the coordinator's certificate replaced by one with a new key: refused by the agent that pins the old key, though it held a session", async () => {
      await poll();
      await poll();
      expect(coordinatorHandshakes()).toEqual({ full: 1, resumed: 0 });
      // The kept connection is left open: the coordinator closes it, as it was made under the old certificate.
      const rekeyed = await ca.issue();
      writeFileSync(join(work, 'cert.pem.new'), rekeyed.certPem);
      writeFileSync(join(work, 'key.pem.new'), rekeyed.keyPem, { mode: 0o600 });
      renameSync(join(work, 'key.pem.new'), join(work, 'key.pem'));
      renameSync(join(work, 'cert.pem.new'), join(work, 'cert.pem'));
      await waitFor('the new certificate served', async () => coordinator.output.some((l) => l.includes('certificate with a new key served')), 20_000, 50);
      const err = await client()
        .fetchBundle(null)
        .catch((e: unknown) => e);
      expect((err as AgentError).code).toBe('tls_untrusted');
      expect((err as AgentError).message).toContain(`its key's sha256 pin is ${spkiPin(rekeyed.certPem)}, not the pinned ${identity.tls_pin}`);
    });
  });
});
