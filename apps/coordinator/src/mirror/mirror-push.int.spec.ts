import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { gitObject } from './domain/git-object.js';
import { MirrorTree } from './domain/mirror-tree.js';
import { MirrorPusher } from './mirror-push.js';
import { AuditRepo } from './repo/audit-repo.js';

/** A smart-HTTP git remote: the real `git http-backend` behind node:http and basic auth, refusing the first `failures` requests. */
function gitRemote(root: string, failures: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (failures-- > 0) {
      res.writeHead(503).end('down for maintenance');
      return;
    }
    if (req.headers.authorization !== `Basic ${Buffer.from('mirror:s3cret').toString('base64')}`) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="remote"' }).end();
      return;
    }
    const url = new URL(req.url!, 'http://x');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: 'pusher',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method!,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf('\r\n\r\n');
      const head = out.subarray(0, split).toString('latin1').split('\r\n');
      let status = 200;
      for (const line of head) {
        const [k, v] = [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()];
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else res.setHeader(k, v);
      }
      res.writeHead(status).end(out.subarray(split + 4));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })));
}

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('mirror push', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-push-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('pushes the branch to a remote over smart HTTP with the configured credentials, retrying while it is down', async () => {
    execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', join(dir, 'remote.git')]);
    execFileSync('git', ['--git-dir', join(dir, 'remote.git'), 'config', 'http.receivepack', 'true']);
    const repo = await AuditRepo.open(join(dir, 'audit.git'));
    const tree = MirrorTree.empty();
    const commit = async (n: number) => {
      const stamp = {
        node: 'alpha',
        version: n,
        set_digest: 'd',
        retired: false,
        artifacts: [{ name: 'flor.json', sha256: `s${n}`, size: 1 }],
        publish_id: `p${n}`,
      };
      const r = tree.apply(
        {
          position: n * 2,
          hash: 'h',
          publishId: `p${n}`,
          kind: 'publish',
          message: `m${n}`,
          actor: 'alice',
          recordedAt: new Date(n * 1000).toISOString(),
          changed: [],
          stamps: [stamp],
        },
        (sha) => gitObject('blob', Buffer.from(sha)),
      );
      await repo.writeObjects(r.objects);
      await repo.setRef(r.commit, n * 2);
      return r.commit;
    };
    const remote = await gitRemote(dir, 2);
    try {
      const pusher = new MirrorPusher(
        repo.gitdir,
        { url: `http://127.0.0.1:${remote.port}/remote.git`, username: 'mirror', password: 's3cret' },
        pino({ level: 'silent' }),
        { baseMs: 20 },
      );
      const first = await commit(1);
      pusher.request();
      await until(() => pusher.pushed === 1);
      expect(pusher.failures).toBe(2);
      const remoteHead = () => execFileSync('git', ['--git-dir', join(dir, 'remote.git'), 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).trim();
      expect(remoteHead()).toBe(first);

      const second = await commit(2);
      pusher.request();
      await until(() => pusher.pushed === 2);
      expect(remoteHead()).toBe(second);
      execFileSync('git', ['--git-dir', join(dir, 'remote.git'), 'fsck', '--strict', '--no-dangling']);
      await pusher.close();
    } finally {
      remote.server.close();
    }
  });
});
