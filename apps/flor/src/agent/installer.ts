import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sha256Hex } from '#bundle';
import { FILE_ARTIFACT, RESOURCES_JSON, type AgentConfig } from '#contracts';
import { writeFileAtomic } from '#runtime';
import type { StateDir } from './state-dir.js';

export const DEFAULT_INSTALL_DIR = '/etc/florete';

/** What a file resource must never write into or replace: the agent's state dir, install dir, install paths and config. */
export function agentOwnPaths(stateDir: string, config: AgentConfig, extra: readonly string[] = []): string[] {
  return [stateDir, config.install.dir ?? DEFAULT_INSTALL_DIR, ...Object.values(config.install.paths), ...extra].map((p) => resolve(p));
}

/** Where an artifact is installed: its own configured path, or the install folder. */
export function targetPath(config: AgentConfig, name: string): string {
  return config.install.paths[name] ?? join(config.install.dir ?? DEFAULT_INSTALL_DIR, name);
}

/** resources.json and the file-<sha256> bytes it points at are applied as host resources, never installed as config. */
export function isResourceArtifact(name: string): boolean {
  return name === RESOURCES_JSON || FILE_ARTIFACT.test(name);
}

function holds(path: string, sha256: string): boolean {
  try {
    return sha256Hex(readFileSync(path)) === sha256;
  } catch {
    return false;
  }
}

/**
 * Installs a set's artifacts and removes what the agent installed before and the set no longer has.
 * Each file is recorded in installed.json right after it is written and forgotten right after it is
 * removed, so a crash part-way resumes from the store: running it again is always safe.
 * `alsoOwned`: targets of an interrupted install, whose writes may not have been recorded yet.
 */
export function installSet(
  state: StateDir,
  config: AgentConfig,
  version: number,
  files: ReadonlyMap<string, Uint8Array>,
  alsoOwned: readonly string[] = [],
): string[] {
  const store = state.readInstalled();
  const wanted = new Map<string, Uint8Array>();
  for (const [name, content] of files) if (!isResourceArtifact(name)) wanted.set(targetPath(config, name), content);
  for (const [path, content] of wanted) {
    const sha = sha256Hex(content);
    if (store.files[path] === sha && holds(path, sha)) continue;
    writeFileAtomic(path, content, 0o644);
    store.files[path] = sha;
    state.writeInstalled(store);
  }
  const stale = new Set([...Object.keys(store.files), ...alsoOwned].filter((p) => !wanted.has(p)));
  for (const path of stale) {
    if (existsSync(path)) rmSync(path, { force: true });
    if (path in store.files) {
      delete store.files[path];
      state.writeInstalled(store);
    }
  }
  store.complete_version = version;
  state.writeInstalled(store);
  return [...wanted.keys()].sort();
}
