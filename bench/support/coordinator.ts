import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { COORDINATOR_MAIN } from './paths.js';
import { onCleanup } from './cleanup.js';

export interface CoordinatorProcess {
  readonly url: string;
  readonly dataDir: string;
  /** The first admin token; '' when serving a given data dir that already had one. */
  readonly adminToken: string;
  readonly child: ChildProcess;
  /** The last lines the process wrote (stdout and stderr). */
  readonly output: string[];
  stop(): Promise<void>;
}

export interface CoordinatorOptions {
  /** PostgreSQL; without it the coordinator uses PGlite in its data dir. */
  readonly databaseUrl?: string;
  readonly env?: Record<string, string>;
  /** Extra node flags for the coordinator process, e.g. ['--cpu-prof', '--cpu-prof-dir=…']. */
  readonly nodeArgs?: readonly string[];
  /** An existing data dir to serve from (kept at stop); a fresh one, removed at stop, otherwise. */
  readonly dataDir?: string;
  /** A further replica on a database another coordinator already set up: it writes no first admin token. */
  readonly replica?: boolean;
  /** PEM files: the coordinator serves HTTPS itself (FLORETE_TLS_CERT, FLORETE_TLS_KEY). */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

const KEEP_LINES = 200;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts the built coordinator (dist/, from `npm run build`) as its own process with a fresh data dir
 * and waits for its `listening:` line (printed whatever the log level), after the line a fresh database
 * prints first naming the file that holds the first admin token. Logs at `warn` unless env says otherwise. Stopped (and its data dir
 * removed) at cleanup.
 */
export async function startCoordinator(options: CoordinatorOptions = {}): Promise<CoordinatorProcess> {
  if (!existsSync(COORDINATOR_MAIN)) throw new Error(`${COORDINATOR_MAIN} is missing: run npm run build`);
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'florete-bench-coord-'));
  const removeDataDir = () => {
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const port = await freePort();
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    HOST: '127.0.0.1',
    FLORETE_DATA: dataDir,
    FLORETE_LOG_LEVEL: 'warn',
    ...(options.tls ? { FLORETE_TLS_CERT: options.tls.certFile, FLORETE_TLS_KEY: options.tls.keyFile } : {}),
    ...options.env,
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;

  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), COORDINATOR_MAIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > KEEP_LINES) output.shift();
  };

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    removeDataDir();
  };
  onCleanup(stop, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    removeDataDir();
  });

  let adminToken: string | undefined;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`coordinator did not start within 180 s:\n${output.join('\n')}`)), 180_000);
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`coordinator exited (${signal ?? code}) before serving:\n${output.join('\n')}`));
    };
    child.once('exit', onExit);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(line);
      // Not a terminal: the coordinator names the 0600 file that holds the token, and prints no secret.
      const m = /^first admin token written to (\S+) /.exec(line);
      if (m) adminToken = readFileSync(m[1], 'utf8').trim();
      if (/^listening: /.test(line)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        if (adminToken || options.dataDir || options.replica) resolve();
        else reject(new Error(`coordinator wrote no first admin token on a fresh data dir:\n${output.join('\n')}`));
      }
    });
    createInterface({ input: child.stderr! }).on('line', keep);
  });
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') process.stderr.write(`coordinator exited (${signal ?? code}):\n${output.slice(-20).join('\n')}\n`);
  });

  return { url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`, dataDir, adminToken: adminToken ?? '', child, output, stop };
}

/** `--cpu-prof <dir>`: the coordinator writes a V8 CPU profile (.cpuprofile) into dir when it stops. */
export function cpuProfArgs(dir: string | undefined): string[] {
  if (!dir) return [];
  mkdirSync(resolve(dir), { recursive: true });
  process.stderr.write(`coordinator CPU profile will be written to ${resolve(dir)}\n`);
  return ['--cpu-prof', `--cpu-prof-dir=${resolve(dir)}`];
}
