/**
 * The poll benchmark's baseline: a bare node:http server doing the coordinator's poll-path work with
 * everything in memory — parse `Bearer fln.<id>.<secret>`, find the credential by id in a Map, hash
 * the secret with sha256 and compare it to the stored hash with timingSafeEqual, check the node,
 * look up the node's ETag in a Map and answer 304 when If-None-Match matches. It is the runtime's
 * ceiling for this request, not a competing implementation.
 *
 * With `tls` it is a node:https server with that certificate and Node's defaults, as the coordinator's
 * own HTTPS is (session tickets on).
 *
 * Run as its own process (spawned by poll.bench): config in FLORETE_BENCH_BASELINE as JSON, prints
 * `listening <port>`, exits when its stdin closes so it never outlives the benchmark.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

export interface BaselineConfig {
  readonly credentials: readonly { readonly id: string; readonly node: string; readonly hash: string }[];
  readonly etags: Record<string, string>;
  /** PEM certificate and key: serve HTTPS. */
  readonly tls?: { readonly cert: string; readonly key: string };
}

const config = JSON.parse(process.env.FLORETE_BENCH_BASELINE ?? '{}') as BaselineConfig;
const credentials = new Map(config.credentials.map((c) => [c.id, c]));
const etags = new Map(Object.entries(config.etags));

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const SECRET = /^fln\.([0-9a-f]{18})\.([A-Za-z0-9_-]{43})$/;
const PATH = /^\/v1\/nodes\/([a-z0-9-]{1,63})\/bundle$/;
const DUMMY_HASH = createHash('sha256').update('not a secret', 'utf8').digest('hex');

const answer: RequestListener = (req, res) => {
  const path = PATH.exec(req.url ?? '');
  if (req.method !== 'GET' || !path) {
    res.writeHead(404).end();
    return;
  }
  const auth = req.headers.authorization;
  const bearer = typeof auth === 'string' ? BEARER.exec(auth) : null;
  const parsed = bearer ? SECRET.exec(bearer[1]) : null;
  if (!parsed) {
    res.writeHead(401).end();
    return;
  }
  const cred = credentials.get(parsed[1]);
  const presented = createHash('sha256').update(parsed[2], 'utf8').digest();
  const stored = Buffer.from(cred?.hash ?? DUMMY_HASH, 'hex');
  if (!timingSafeEqual(presented, stored) || !cred) {
    res.writeHead(401).end();
    return;
  }
  if (cred.node !== path[1]) {
    res.writeHead(403).end();
    return;
  }
  const etag = etags.get(path[1]);
  if (!etag) {
    res.writeHead(404).end();
    return;
  }
  res.setHeader('etag', etag);
  res.setHeader('cache-control', 'no-cache');
  if ((req.headers['if-none-match'] ?? '').trim() === etag) {
    res.writeHead(304).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/jose' }).end('baseline has no bundle body');
};
const server = config.tls ? createHttpsServer({ cert: config.tls.cert, key: config.tls.key }, answer) : createServer(answer);

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
