import { configPathFor, loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { Daemon } from '../agent/daemon.js';
import { stderrLog } from '../agent/log.js';

/**
 * Runs until SIGTERM or SIGINT, or until a self-upgrade hands over to the new version: then stops
 * cleanly and resolves (exit 0), and its supervisor (systemd's Restart=always) starts the new binary.
 */
export type RunOptions = CommonOptions;

export async function run(options: RunOptions): Promise<void> {
  const config = loadConfig(options);
  const log = stderrLog((process.env.FLORETE_LOG_LEVEL as 'info' | undefined) ?? 'info');
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
