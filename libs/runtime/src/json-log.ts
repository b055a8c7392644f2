export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type Log = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

const ORDER: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export interface JsonLineLogOptions {
  /** stderr for a daemon whose stdout is for its commands' output (the agent); stdout otherwise. */
  readonly stream?: 'stdout' | 'stderr';
  /** Lines below this level are dropped. */
  readonly minimum?: LogLevel;
  /** Fields every line carries (the program's name, its pid). */
  readonly fields?: Record<string, unknown>;
}

/**
 * The log of the small programs (the agent, the reference vertex): one JSON object per line with
 * `time`, `level` and `msg`; journald keeps the lines and tools parse them. The coordinator logs
 * through pino in the same shape.
 */
export function jsonLineLog(options: JsonLineLogOptions = {}): Log {
  const out = options.stream === 'stderr' ? process.stderr : process.stdout;
  const floor = ORDER.indexOf(options.minimum ?? 'debug');
  const fixed = options.fields ?? {};
  return (level, msg, fields = {}) => {
    if (ORDER.indexOf(level) < floor) return;
    out.write(`${JSON.stringify({ time: new Date().toISOString(), level, ...fixed, msg, ...fields })}\n`);
  };
}

/** A level name from the environment (FLORETE_LOG_LEVEL), or the fallback when it is not one. */
export function logLevelFrom(value: string | undefined, fallback: LogLevel = 'info'): LogLevel {
  return (ORDER as readonly string[]).includes(value ?? '') ? (value as LogLevel) : fallback;
}

export const silentLog: Log = () => {};
