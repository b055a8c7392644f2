import { existsSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface Forwarder {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A TCP forwarder on loopback to `target` that cuts every connection while the file `blocked`
 * exists: the tests' stand-in for a set whose activation cuts the node's own path to the coordinator.
 */
export async function startForwarder(target: URL, blocked: string): Promise<Forwarder> {
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    if (existsSync(blocked)) {
      inbound.destroy();
      return;
    }
    const outbound = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
    }
    const cut = () => {
      inbound.destroy();
      outbound.destroy();
    };
    // Checked on every chunk, both ways: a kept-alive connection or a held watch opened before the cut must not outlive it.
    inbound.on('data', (chunk: Buffer) => (existsSync(blocked) ? cut() : outbound.write(chunk)));
    outbound.on('data', (chunk: Buffer) => (existsSync(blocked) ? cut() : inbound.write(chunk)));
    inbound.on('end', () => outbound.end());
    outbound.on('end', () => inbound.end());
    inbound.on('error', cut);
    outbound.on('error', cut);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    // Open connections are cut too: a held watch would keep close() waiting for minutes.
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  };
}
