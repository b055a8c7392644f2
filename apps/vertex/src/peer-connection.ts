import type { Socket } from 'node:net';
import { NodeName } from '#contracts';
import type { AclTable } from '#vertex-control';
import type { Log } from '#runtime';

const MAX_HELLO = 256;
export const HELLO_TIMEOUT_MS = 5_000;
const HELLO = /^HELLO (\S+)\r?$/;

/**
 * One inbound connection to a published service: the peer names itself with `HELLO <node>`, the
 * ingress allow list as it is at that moment decides, and an admitted peer gets its lines echoed.
 * The decision is taken once: a later swap never closes an admitted connection.
 *
 * The hello is not authenticated; a production vertex takes the peer's name from its mesh identity.
 */
export function handlePeer(socket: Socket, service: string, acl: () => AclTable, log: Log): void {
  const remote = `${socket.remoteAddress}:${socket.remotePort}`;
  let buf = Buffer.alloc(0);
  const refuse = (reason: string, line: string): void => {
    log('warn', 'connection refused', { service, remote, reason });
    socket.end(`${line}\n`);
  };
  const timer = setTimeout(() => {
    socket.off('data', onData);
    refuse('no hello in time', 'ERR expected "HELLO <node>"');
  }, HELLO_TIMEOUT_MS);
  const onData = (chunk: Buffer): void => {
    buf = Buffer.concat([buf, chunk]);
    const nl = buf.indexOf(0x0a);
    if (nl < 0) {
      if (buf.length > MAX_HELLO) {
        socket.off('data', onData);
        clearTimeout(timer);
        refuse('hello too long', 'ERR expected "HELLO <node>"');
      }
      return;
    }
    socket.off('data', onData);
    clearTimeout(timer);
    const match = HELLO.exec(buf.subarray(0, nl).toString('utf8'));
    const peer = match ? NodeName.safeParse(match[1]) : null;
    if (!peer?.success) return refuse('malformed hello', 'ERR expected "HELLO <node>"');
    if (!acl().allowsIngress(service, peer.data)) {
      return refuse(`${peer.data} is not on the ingress list of ${service}`, `DENIED ${peer.data} may not reach ${service}`);
    }
    log('info', 'connection admitted', { service, remote, peer: peer.data });
    socket.write('OK\n');
    const rest = buf.subarray(nl + 1);
    if (rest.length > 0) socket.write(rest);
    socket.pipe(socket);
  };
  socket.on('data', onData);
  socket.on('close', () => clearTimeout(timer));
}
