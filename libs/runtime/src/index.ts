// Small pieces every program of the project shares: newline-delimited JSON over unix sockets, the
// retry backoff, the JSON line log and crash-safe file writes.
export { readLines } from './line-reader.js';
export { socketIsLive } from './socket-liveness.js';
export {
  LineSocketError,
  causeCode,
  clearStaleSocket,
  requestLine,
  serveLineSocket,
  type LineServer,
  type LineServerOptions,
  type LineSocketErrorCode,
} from './line-socket.js';
export { backoffDelay, upperHalfJitter } from './backoff.js';
export { jsonLineLog, logLevelFrom, silentLog, type Log, type LogLevel, type JsonLineLogOptions } from './json-log.js';
export {
  fsyncDir,
  isTempName,
  replaceFileUnsynced,
  symlinkAtomic,
  tempNameFor,
  writeFileAtomic,
  writeFileDurable,
  writeJsonAtomic,
  type FileOwner,
} from './atomic-write.js';
