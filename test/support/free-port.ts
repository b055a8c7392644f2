import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago: the kernel's pick for a listener closed at once. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
