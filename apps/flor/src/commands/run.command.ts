import { configPathFor, loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { Daemon } from '../agent/daemon.js';
import { jsonLineLog, logLevelFrom } from '#runtime';

/**
 * Runs until SIGTERM or SIGINT, or until a self-upgrade hands over to the new version: then stops
 * cleanly and resolves (exit 0), and its supervisor (systemd's Restart=always) starts the new binary.
 */
export type RunOptions = CommonOptions;

export async function run(options: RunOptions): Promise<void> {
  const config = loadConfig(options);
  // stderr: journald keeps it, and stdout stays for commands' own output.
  const log = jsonLineLog({ stream: 'stderr', minimum: logLevelFrom(process.env.FLORETE_LOG_LEVEL) });
  const daemon = new Daemon(stateDirFor(options, config), config, log, configPathFor(options));
  await daemon.start();
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log('info', 'stopping', { reason: signal });
      daemon.stop().then(resolve, (err: Error) => {
        log('error', 'stop failed', { reason: err.message });
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    void daemon.handover.then((version) => stop(`handover to ${version}`));
  });
}
