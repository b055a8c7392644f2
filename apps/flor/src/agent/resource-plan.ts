import type { FileResource, OriginalFile, OwnedFiles, OwnedPackage, PackageBefore, PackageResource, PlannedResource, ResourcesJson } from '#contracts';
import { isInstalledAt, type InstalledPackage } from './package-manager.js';

/**
 * One step of a resource pass, in the order to take them. `apply` writes (or confirms) a declared file;
 * `refuse` is a declared file over one of the agent's own paths; `remove` drops a file the agent owns
 * that the set no longer declares, putting back the original when there was one (`original`).
 * `install` brings a declared package to its version (or confirms it there); `uninstall` removes a
 * package the agent installed that the set no longer declares (`purge`: with its configuration files);
 * `forget` drops from the store a package that was on the host before the agent touched it, leaving
 * it installed.
 */
export type ResourceStep =
  | { readonly kind: 'apply'; readonly resource: FileResource }
  | { readonly kind: 'refuse'; readonly path: string; readonly reason: string }
  | { readonly kind: 'remove'; readonly path: string; readonly original: OriginalFile | null }
  | { readonly kind: 'install'; readonly resource: PackageResource }
  | { readonly kind: 'uninstall'; readonly manager: PackageResource['manager']; readonly name: string; readonly purge: boolean }
  | { readonly kind: 'forget'; readonly manager: PackageResource['manager']; readonly name: string; readonly before: PackageBefore };

/** The agent's own path a resource would write into or replace (an ancestor), if any. */
export function ownPathAt(path: string, ownPaths: readonly string[]): string | undefined {
  return ownPaths.find((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`));
}

/**
 * What to do with a package the agent holds and the set dropped. One it installed is purged: nothing
 * of it predates the agent, so nothing of it stays. One that was there before is never removed, only
 * forgotten, at whatever version it is now (an upgrade the agent made stays). One removed earlier with
 * its configuration files left (dpkg's `config-files`) is removed again without purging, so those
 * files stay as the agent found them.
 */
export function packageRemoval(manager: PackageResource['manager'], name: string, entry: OwnedPackage): ResourceStep {
  if (entry.before === null) return { kind: 'uninstall', manager, name, purge: true };
  if (entry.before.status === 'config-files') return { kind: 'uninstall', manager, name, purge: false };
  return { kind: 'forget', manager, name, before: entry.before };
}

/**
 * Plans a resource pass from what the set declares (null: nothing, as for a retired set) and what the
 * store says the agent owns. Declared files come first, then declared packages, each in declaration
 * order; then removals: packages by name, then files by path. A failed apply stops the pass before
 * any removal, so everything the previous set had stays in place.
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
  const wantedPackages = new Set<string>();
  for (const resource of declared?.packages ?? []) {
    wantedPackages.add(resource.name);
    steps.push({ kind: 'install', resource });
  }
  for (const name of Object.keys(owned.packages).sort()) {
    if (!wantedPackages.has(name)) steps.push(packageRemoval(owned.packages[name].manager, name, owned.packages[name]));
  }
  for (const path of Object.keys(owned.files).sort()) {
    if (!wanted.has(path)) steps.push({ kind: 'remove', path, original: owned.files[path].original });
  }
  return steps;
}

/** The declared files that are a package manager's sources: what a pass refreshes before it installs. */
export function declaredSources(declared: ResourcesJson | null, isSource: (path: string) => boolean): string[] {
  return (declared?.files ?? []).map((f) => f.path).filter(isSource);
}

/** How a step names its resource in an error or a log line. */
export function stepLabel(step: ResourceStep): string {
  switch (step.kind) {
    case 'apply':
      return `file resource ${step.resource.path}`;
    case 'refuse':
    case 'remove':
      return `file resource ${step.path}`;
    case 'install':
      return `package resource ${step.resource.name}=${step.resource.version} (${step.resource.manager})`;
    case 'uninstall':
    case 'forget':
      return `package resource ${step.name} (${step.manager})`;
  }
}

/** What a dry run shows of a plan, given what the package database says of each package in it now. */
export function plannedResources(steps: readonly ResourceStep[], installed: ReadonlyMap<string, InstalledPackage>): PlannedResource[] {
  const now = (name: string) => {
    const p = installed.get(name);
    return p && p.status === 'installed' ? p.version : null;
  };
  return steps.map((step): PlannedResource => {
    switch (step.kind) {
      case 'apply':
        return { kind: 'file', path: step.resource.path, action: 'write' };
      case 'refuse':
        return { kind: 'file', path: step.path, action: 'refuse' };
      case 'remove':
        return { kind: 'file', path: step.path, action: 'remove' };
      case 'install': {
        const p = installed.get(step.resource.name);
        const action = p && isInstalledAt(p, step.resource.version) ? 'unchanged' : 'install';
        return {
          kind: 'package',
          manager: step.resource.manager,
          name: step.resource.name,
          version: step.resource.version,
          action,
          installed: now(step.resource.name),
        };
      }
      case 'uninstall':
        return { kind: 'package', manager: step.manager, name: step.name, version: null, action: step.purge ? 'purge' : 'remove', installed: now(step.name) };
      case 'forget':
        return { kind: 'package', manager: step.manager, name: step.name, version: null, action: 'forget', installed: now(step.name) };
    }
  });
}
