import { createServer, type Server, type Socket } from 'node:net';
import type { FlorJson } from '#contracts';
import { VertexControl } from '#vertex-control';
import type { Log } from '#runtime';
import { handlePeer } from './peer-connection.js';

function hostOf(listen: string): string {
  const host = listen.slice(0, listen.lastIndexOf(':'));
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

export interface VertexOptions {
  readonly config: FlorJson;
  readonly version: number | null;
  readonly controlPath: string;
  readonly log: Log;
}

/**
 * The reference vertex: one TCP listener per published TCP service on the host of `listen`, every
 * new connection checked against the ingress list the control socket currently holds.
 */
export class Vertex {
  private readonly servers: Server[] = [];
  private readonly peers = new Set<Socket>();

  private constructor(
    private readonly control: VertexControl,
    private readonly log: Log,
  ) {}

  static async start(options: VertexOptions): Promise<Vertex> {
    const control = new VertexControl({ config: options.config, version: options.version, log: options.log });
    const vertex = new Vertex(control, options.log);
    try {
      await vertex.listenServices(options.config);
      await control.listen(options.controlPath);
    } catch (err) {
      await vertex.stop();
      throw err;
    }
    return vertex;
  }

  private async listenServices(config: FlorJson): Promise<void> {
    const host = hostOf(config.listen);
    for (const service of config.services) {
      if (service.protocol !== 'tcp') {
        this.log('warn', 'service not served: the reference vertex speaks tcp only', { service: service.name, protocol: service.protocol });
        continue;
      }
      const server = createServer((socket) => {
        this.peers.add(socket);
        socket.on('close', () => this.peers.delete(socket));
        socket.on('error', () => socket.destroy());
        handlePeer(socket, service.name, () => this.control.acl, this.log);
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(service.port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.servers.push(server);
    }
  }

  /** Stops accepting, closes peers and the control socket (which removes its file). */
  async stop(): Promise<void> {
    for (const s of this.peers) s.destroy();
    await Promise.all([this.control.close(), ...this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))]);
  }
}
