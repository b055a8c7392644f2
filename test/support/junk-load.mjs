// Load for the anonymous-route test, run as a process of its own so that what it measures is the
// coordinator, not the busy test process. Plain JavaScript: it runs under node, not Jest.
//   node junk-load.mjs send <url> <json [[method, path, contentType], …]> <bytes>
//     sends every request at once, each with <bytes> of random junk over its own connection,
//     and prints one JSON answer per request: {route, contentType, status, ms, bytes, type, error}
//   node junk-load.mjs probe <url>
//     GETs /healthz every 50 ms until stdin closes, then prints the latencies (ms) as JSON
import { Agent, request } from 'node:http';
import { randomBytes } from 'node:crypto';

const [mode, baseUrl, ...rest] = process.argv.slice(2);
// One connection per request, all at once, kept alive as a browser's or fetch's would be. (A client
// that asks for Connection: close may see its write fail before it reads an early answer: Node
// closes such a connection as soon as it has answered, with the rest of the upload unread.)
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

function send(method, path, contentType, body) {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a) => {
      if (settled) return;
      settled = true;
      resolve({ route: `${method} ${path}`, contentType, ...a });
    };
    const req = request(new URL(path, baseUrl), { method, agent, headers: { 'content-type': contentType, 'content-length': body.length } }, (res) => {
      const ms = performance.now() - started;
      let bytes = 0;
      const done = () => finish({ status: res.statusCode, ms, bytes, type: res.headers['content-type'] });
      res.on('data', (c) => (bytes += c.length));
      res.on('end', done);
      res.on('error', done);
    });
    // The server may answer before the upload is done and then cut the connection: that is the
    // point, not an error (the socket may report the reset after the answer was read).
    req.on('error', (e) => finish({ ms: performance.now() - started, bytes: 0, error: e.message }));
    req.on('socket', (socket) => socket.on('error', () => undefined));
    req.end(body);
  });
}

if (mode === 'send') {
  const requests = JSON.parse(rest[0]);
  const body = randomBytes(Number(rest[1]));
  const answers = await Promise.all(requests.map(([method, path, type]) => send(method, path, type, body)));
  process.stdout.write(JSON.stringify(answers));
  agent.destroy();
} else if (mode === 'probe') {
  const times = [];
  let on = true;
  process.stdin.on('end', () => (on = false)).resume();
  while (on) {
    const t = performance.now();
    await (await fetch(new URL('/healthz', baseUrl))).text();
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 50));
  }
  process.stdout.write(JSON.stringify(times));
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
