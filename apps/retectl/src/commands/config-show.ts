import { configPath, readConfig } from '../config.js';
import { out, outJson } from '../output.js';

/** Shows the config without the token's value: only whether one is set. */
export async function run(options: { readonly json?: boolean }): Promise<void> {
  const path = configPath();
  const config = readConfig(path);
  const view = { path, coordinator: config.coordinator ?? null, token: config.token ? 'set' : 'not set' };
  if (options.json) return outJson(view);
  out(`config file: ${view.path}\ncoordinator: ${view.coordinator ?? '(not set)'}\ntoken: ${view.token}`);
}
