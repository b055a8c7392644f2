import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface LaggingProxy {
  /** The database URL through the proxy. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of PostgreSQL that delays, by `delayMs`, what the server sends on the
 * connections whose startup packet names an application starting with `application` (a replica's
 * change-feed listener, `florete-cache:…`), and passes everything else as is. The replica behind it
 * hears every change `delayMs` late while its own pings still come back well within its trust
 * window: its memory lags the other replicas' by that much, as a loaded replica's does.
 */
export async function startLaggingProxy(databaseUrl: string, application: string, delayMs: number): Promise<LaggingProxy> {
  const target = new URL(databaseUrl);
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
    }
    let lagging: boolean | null = null;
    inbound.on('data', (chunk: Buffer) => {
      // The first packet is the startup message, application_name among its parameters.
      lagging ??= chunk.includes(Buffer.from(`application_name\0${application}`, 'latin1'));
      outbound.write(chunk);
    });
    // Timers of one delay fire in the order they were set: the stream stays in order.
    outbound.on('data', (chunk: Buffer) => (lagging ? setTimeout(() => inbound.writable && inbound.write(chunk), delayMs) : inbound.write(chunk)));
    const cut = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('end', () => outbound.end());
    outbound.on('end', () => (lagging ? setTimeout(() => inbound.end(), delayMs) : inbound.end()));
    inbound.on('error', cut);
    outbound.on('error', cut);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: url.toString(),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  };
}
