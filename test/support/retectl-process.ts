import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

/** The built CLI (`npm run build` first). */
export const RETECTL = resolve('dist/apps/retectl/src/main.js');

export interface RetectlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built retectl as a real process with only the environment given (plus PATH; HOME nowhere). */
export function runRetectl(args: readonly string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}): Promise<RetectlRun> {
  return new Promise((done) => {
    const env = { PATH: process.env.PATH ?? '', HOME: '/nonexistent', ...options.env };
    const child = execFile(process.execPath, [RETECTL, ...args], { env, cwd: options.cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin?.end(options.input ?? '');
  });
}
