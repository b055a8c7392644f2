import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { BASELINE_SERVER } from './paths.js';
import { onCleanup } from './cleanup.js';
import type { BaselineConfig } from './baseline-server.js';

export interface BaselineProcess {
  readonly url: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** Spawns the bare node:http (or, with `tls`, node:https) baseline (baseline-server.ts) in its own process, like the coordinator. */
export async function startBaseline(config: BaselineConfig): Promise<BaselineProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, FLORETE_BENCH_BASELINE: JSON.stringify(config) };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [BASELINE_SERVER], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    await exited;
  };
  onCleanup(stop, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('baseline server did not start within 10 s')), 10_000);
    child.once('exit', (code) => reject(new Error(`baseline server exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { url: `${config.tls ? 'https' : 'http'}://127.0.0.1:${port}`, pid: child.pid, stop };
}
