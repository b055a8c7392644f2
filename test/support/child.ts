import type { ChildProcess } from 'node:child_process';

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/**
 * Resolves when `child` has exited, at once if it already has: its `exit` event is emitted only once,
 * so a listener added afterwards would wait forever. Rejects after `timeoutMs`, naming `what`, so a
 * process that will not stop fails the test instead of holding the run until its time limit.
 */
export function waitForExit(child: ChildProcess, what: string, timeoutMs = 15_000): Promise<ChildExit> {
  if (hasExited(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      reject(new Error(`${what} (pid ${child.pid}) did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      resolve({ code, signal });
    };
    child.once('exit', onExit);
  });
}

/**
 * Stops `child` with `signal` and waits for it, bounded; a process still running after `timeoutMs`
 * is killed with SIGKILL (so nothing outlives the test) and the test fails, naming it.
 */
export async function stopChild(child: ChildProcess, what: string, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<ChildExit> {
  if (hasExited(child)) return { code: child.exitCode, signal: child.signalCode };
  child.kill(signal);
  try {
    return await waitForExit(child, what, timeoutMs);
  } catch (err) {
    child.kill('SIGKILL');
    await waitForExit(child, what, 5_000).catch(() => undefined);
    throw err;
  }
}
