import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

const RETECTL = join(REPO_ROOT, 'dist/apps/retectl/src/main.js');
/** Of a command's output, what is kept from its start (a publish's summary) and from its end (a compile's). */
const KEEP = 4096;
/** Of its stderr, what is kept from the start: every `--verbose` line of a publish. */
const KEEP_ERR = 64 * 1024;

/** Loaded into retectl's process: its CPU time on fd 3 as it exits. */
const REPORT_CPU = `data:text/javascript,${encodeURIComponent("import { writeSync } from 'node:fs'; process.on('exit', () => { const c = process.cpuUsage(); writeSync(3, String((c.user + c.system) / 1000)); });")}`;

export interface RetectlRun {
  readonly wallMs: number;
  /** User + system CPU time of retectl's process. */
  readonly cpuMs: number;
  /** The start and the end of what it printed on stdout. */
  readonly head: string;
  readonly tail: string;
  /** The start of what it printed on stderr (its `--verbose` lines). */
  readonly errHead: string;
}

/** The last line retectl printed: a compile's summary. */
export const lastLine = (run: RetectlRun): string => run.tail.trimEnd().split('\n').at(-1) ?? '';

/**
 * The built retectl in its own process, as an operator runs it, timed from its start to its exit;
 * a non-zero exit rejects with the end of its stderr. `env` replaces the environment when given.
 */
export function timedRetectl(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<RetectlRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', REPORT_CPU, RETECTL, ...args], { ...(env ? { env } : {}), stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    const streams = { head: '', tail: '', err: '', errHead: '', cpu: '' };
    child.stdout?.on('data', (c: Buffer) => {
      if (streams.head.length < KEEP) streams.head += c.toString();
      streams.tail = (streams.tail + c.toString()).slice(-KEEP);
    });
    child.stderr?.on('data', (c: Buffer) => {
      if (streams.errHead.length < KEEP_ERR) streams.errHead += c.toString();
      streams.err = (streams.err + c.toString()).slice(-KEEP);
    });
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => (streams.cpu += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) return reject(new Error(`retectl ${args[0]} exited ${code}: ${streams.err.slice(-2000)}`));
      resolve({ wallMs, cpuMs: Number(streams.cpu), head: streams.head, tail: streams.tail, errHead: streams.errHead });
    });
  });
}
