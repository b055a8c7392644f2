export type LogLevel = 'info' | 'warn' | 'error';
export type Log = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

/** One JSON object per stdout line; tests and log shippers read these. */
export function jsonLog(name: string): Log {
  return (level, msg, fields = {}) => {
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, name, pid: process.pid, msg, ...fields })}\n`);
  };
}
