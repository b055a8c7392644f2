import type { FileResource, OriginalFile, OwnedFiles, ResourcesJson } from '#contracts';
import { AgentError } from '../errors.js';

/**
 * One step of a resource pass, in the order to take them. `apply` writes (or confirms) a declared file;
 * `refuse` is a declared file over one of the agent's own paths; `remove` drops a file the agent owns
 * that the set no longer declares, putting back the original when there was one (`original`).
 */
export type ResourceStep =
  | { readonly kind: 'apply'; readonly resource: FileResource }
  | { readonly kind: 'refuse'; readonly path: string; readonly reason: string }
  | { readonly kind: 'remove'; readonly path: string; readonly original: OriginalFile | null };

/** The agent's own path a resource would write into or replace (an ancestor), if any. */
export function ownPathAt(path: string, ownPaths: readonly string[]): string | undefined {
  return ownPaths.find((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`));
}

/**
 * Package resources need a package manager step this agent does not have. Refusing the whole set before
 * any file is written keeps a half-applied host (files of a set whose packages never came) from happening.
 */
export function refuseUnsupported(declared: ResourcesJson | null, agentVersion: string): void {
  if (!declared || declared.packages.length === 0) return;
  const managers = [...new Set(declared.packages.map((p) => p.manager))].join(', ');
  const packages = declared.packages.map((p) => `${p.name} ${p.version}`).join(', ');
  throw new AgentError('unsupported_resource', `package resources (${managers}) are not applied by this agent version (flor ${agentVersion}) yet: ${packages}`);
}

/**
 * Plans a resource pass from what the set declares (null: nothing, as for a retired set) and what the
 * store says the agent owns. Declared files come first, in declaration order; then removals, by path,
 * so that a failed apply leaves everything the previous set had in place.
 */
export function planResources(declared: ResourcesJson | null, owned: OwnedFiles, ownPaths: readonly string[]): ResourceStep[] {
  const steps: ResourceStep[] = [];
  const wanted = new Set<string>();
  for (const resource of declared?.files ?? []) {
    wanted.add(resource.path);
    const own = ownPathAt(resource.path, ownPaths);
    if (own !== undefined) {
      steps.push({ kind: 'refuse', path: resource.path, reason: `${resource.path} would overwrite the agent's own ${own}` });
    } else {
      steps.push({ kind: 'apply', resource });
    }
  }
  for (const path of Object.keys(owned.files).sort()) {
    if (!wanted.has(path)) steps.push({ kind: 'remove', path, original: owned.files[path].original });
  }
  return steps;
}
