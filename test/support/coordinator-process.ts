import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { stopChild } from './child.js';

const MAIN = resolve('dist/apps/coordinator/src/main.js');

export interface CoordinatorProcess {
  readonly url: string;
  readonly dataDir: string;
  /** Created on the first start only, read from the file the coordinator names. */
  readonly adminToken: string | undefined;
  readonly child: ChildProcess;
  readonly output: string[];
  stop(): Promise<void>;
}

/**
 * Starts the built coordinator (`npm run build` first) as a real process on a free port, with its own
 * data dir, and waits until it listens. PGlite unless databaseUrl is given; `main` runs another build;
 * `nodeArgs` go to node before the script (a module to preload, say).
 */
export async function startCoordinatorProcess(
  options: { databaseUrl?: string; dataDir?: string; env?: Record<string, string>; main?: string; nodeArgs?: readonly string[] } = {},
): Promise<CoordinatorProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'florete-coord-'));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: '0',
    HOST: '127.0.0.1',
    FLORETE_DATA: dataDir,
    FLORETE_LOG_LEVEL: 'info',
    ...options.env,
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.main ?? MAIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  let adminToken: string | undefined;
  const url = await new Promise<string>((resolvePromise, reject) => {
    // A generous bound: a new embedded database on a busy machine takes long to create. A coordinator
    // that never listened is killed, not left running to keep the test process alive.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`coordinator did not start within 180 s:\n${output.join('\n')}`));
    }, 180_000);
    const onLine = (line: string) => {
      output.push(line);
      // Not a terminal: the coordinator names the 0600 file that holds the token, and prints no secret.
      const m = /^first admin token written to (\S+) /.exec(line);
      if (m) adminToken = readFileSync(m[1], 'utf8').trim();
      const listening = /^listening: (\S+)$/.exec(line);
      if (listening) {
        clearTimeout(timer);
        resolvePromise(listening[1]);
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', (l) => output.push(l));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`coordinator exited with ${code} before listening:\n${output.join('\n')}`));
    });
  });
  return {
    url,
    dataDir,
    adminToken,
    child,
    output,
    stop: async () => {
      await stopChild(child, 'the coordinator');
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
