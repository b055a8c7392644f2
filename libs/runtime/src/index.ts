// Small pieces the project's programs share: newline-delimited JSON over unix sockets, the
// retry backoff, the JSON line log, crash-safe file writes, giving the heap's pages back after
// large work, and work run in a short-lived child process.
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
  isLeftoverTemp,
  isTempName,
  replaceFileUnsynced,
  symlinkAtomic,
  tempNameFor,
  writeFileAtomic,
  writeFileDurable,
  writeJsonAtomic,
  type FileOwner,
} from './atomic-write.js';
export { processRunning } from './process-running.js';
export { LARGE_WORK, largeWorkBegun, memoryReleases, releaseMemorySoon } from './memory-release.js';
export { runApart, runAsScript, type ApartWork } from './apart.js';
