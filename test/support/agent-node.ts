import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';

/**
 * The Node.js the packaged agent runs on in these tests: `FLORETE_AGENT_NODE` (a node binary; `.ci/run`
 * sets it to each supported line in turn), else the node running the tests. The tools that build the
 * package keep running on the test runner's own node.
 */
export const AGENT_NODE = process.env.FLORETE_AGENT_NODE || process.execPath;

/** `v<major>.<minor>.<patch>` of {@link AGENT_NODE}, as the agent's self-check names it. */
export const AGENT_NODE_VERSION = (() => {
  const r = spawnSync(AGENT_NODE, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`FLORETE_AGENT_NODE=${AGENT_NODE} does not run: ${r.stderr || r.error?.message}`);
  return r.stdout.trim();
})();

/** `env` with {@link AGENT_NODE}'s folder first on PATH: the node that /usr/bin/flor and the .tar.gz's launcher find. */
export function withAgentNode(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, PATH: `${dirname(AGENT_NODE)}:${env.PATH ?? ''}` };
}
