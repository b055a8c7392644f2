export type Level = 'debug' | 'info' | 'warn' | 'error';
export type Log = (level: Level, msg: string, fields?: Record<string, unknown>) => void;

/** One JSON object per line on stderr: journald keeps it, tools can parse it. */
export function stderrLog(minimum: Level = 'info'): Log {
  const order: Level[] = ['debug', 'info', 'warn', 'error'];
  const floor = order.indexOf(minimum);
  return (level, msg, fields = {}) => {
    if (order.indexOf(level) < floor) return;
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  };
}

export const silentLog: Log = () => {};
