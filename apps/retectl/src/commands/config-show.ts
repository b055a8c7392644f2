import { configPath, readConfig } from '../config.js';
import { out, outJson } from '../output.js';

/** Shows the config without the token's value: only whether one is set. */
export async function run(options: { readonly json?: boolean }): Promise<void> {
  const path = configPath();
  const config = readConfig(path);
  const view = {
    path,
    coordinator: config.coordinator ?? null,
    token: config.token ? 'set' : 'not set',
    ...(config.ca_file !== undefined ? { ca_file: config.ca_file } : {}),
    ...(config.insecure_http !== undefined ? { insecure_http: config.insecure_http } : {}),
  };
  if (options.json) return outJson(view);
  const tls = [
    ...(view.ca_file !== undefined ? [`ca_file: ${view.ca_file}`] : []),
    ...(view.insecure_http !== undefined ? [`insecure_http: ${view.insecure_http}`] : []),
  ];
  out([`config file: ${view.path}`, `coordinator: ${view.coordinator ?? '(not set)'}`, `token: ${view.token}`, ...tls].join('\n'));
}
