/**
 * Whether a process with this pid runs: signal 0 checks without sending anything. Only ESRCH says it
 * does not; EPERM is a process of another user, which runs. A pid may since belong to another
 * process than the one that wrote it down: callers that must tell the two apart check more.
 */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
