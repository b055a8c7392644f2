import { agentPathAt } from '#contracts';
import { DEFAULT_CONFIG_PATH } from './config.js';
import { DEFAULT_INSTALL_DIR } from './installer.js';
import { DEFAULT_STATE_DIR } from './state-dir.js';

// The rete refuses file resources over the agent's own folders by a list kept in the contracts; if the
// agent's defaults move, that list must move with them or a resource could overwrite the agent.
describe("the agent's default host paths", () => {
  it.each([DEFAULT_CONFIG_PATH, DEFAULT_INSTALL_DIR, DEFAULT_STATE_DIR])('%s is reserved from file resources', (path) => {
    expect(agentPathAt(path)).toBeDefined();
    expect(agentPathAt(`${path}/x`)).toBeDefined();
  });
});
