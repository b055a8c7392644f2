import type { Socket } from 'node:net';

/**
 * Splits a socket's bytes into newline-terminated lines (a trailing `\r` dropped), holding at most
 * `maxLine` bytes of an unfinished line: a peer cannot make the reader buffer without bound.
 * `onTooLong` is called once and no further line is delivered. A last line without its newline is
 * delivered when the peer ends its side.
 */
export function readLines(socket: Socket, maxLine: number, handlers: { onLine: (line: string) => void; onTooLong: () => void; onEnd: () => void }): void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let stopped = false;
  const emit = (tail: Buffer): void => {
    const bytes = pendingBytes === 0 ? tail : Buffer.concat([...pending, tail]);
    pending = [];
    pendingBytes = 0;
    const line = bytes.toString('utf8');
    handlers.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  };
  const tooLong = (): void => {
    stopped = true;
    pending = [];
    pendingBytes = 0;
    handlers.onTooLong();
  };
  socket.on('data', (chunk: Buffer) => {
    let start = 0;
    while (!stopped) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      if (pendingBytes + (nl - start) > maxLine) return tooLong();
      emit(chunk.subarray(start, nl));
      start = nl + 1;
    }
    if (stopped || start === chunk.length) return;
    if (pendingBytes + (chunk.length - start) > maxLine) return tooLong();
    pending.push(chunk.subarray(start));
    pendingBytes += chunk.length - start;
  });
  socket.on('end', () => {
    if (!stopped && pendingBytes > 0) emit(Buffer.alloc(0));
    handlers.onEnd();
  });
}
