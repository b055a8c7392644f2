import type { ReportResource } from '#contracts';
import { AgentError, type AgentErrorCode } from '../errors.js';
import { applyFile, removeFile, sweepOriginals, type OwnedStore } from './file-resources.js';
import type { ManagerName, PackageManager } from './package-manager.js';
import { forgetPackage, installPackage, uninstallPackage, type PackageContext } from './package-resources.js';
import { stepLabel, type ResourceStep } from './resource-plan.js';
import type { UserDb } from './user-db.js';
import type { SelfUpgrade } from './self-upgrade.js';

/** A resource pass that stopped at a resource: what it did up to there, the failed one last. */
export class ResourcePassFailed extends AgentError {
  constructor(
    code: AgentErrorCode,
    message: string,
    readonly resources: ReportResource[],
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

export interface ResourcePassContext {
  /** The file contents by artifact name. */
  readonly contents: ReadonlyMap<string, Uint8Array>;
  readonly users: UserDb;
  /** The package manager for each manager a package may name. */
  readonly packageManagers: Readonly<Record<ManagerName, PackageManager>>;
  /** The declared files that are package sources, refreshed before the first install. */
  readonly sources: readonly string[];
  /** Self-upgrade of the agent's own package (absent: it is an ordinary package). */
  readonly selfUpgrade?: SelfUpgrade;
}

/** The report line of a step that failed. */
function failedLine(step: ResourceStep, error: string): ReportResource {
  switch (step.kind) {
    case 'apply':
      return { kind: 'file', path: step.resource.path, outcome: 'failed', error };
    case 'refuse':
    case 'remove':
      return { kind: 'file', path: step.path, outcome: 'failed', error };
    case 'install':
      return { kind: 'package', manager: step.resource.manager, name: step.resource.name, version: step.resource.version, outcome: 'failed', error };
    case 'uninstall':
    case 'forget':
      return { kind: 'package', manager: step.manager, name: step.name, version: null, outcome: 'failed', error };
  }
}

/**
 * Takes the steps of a resource pass in order and returns what each did. Each resource is read back
 * after it is applied and recorded in the store only then; a failure stops the pass at that resource
 * (ResourcePassFailed, with the tool's own error), leaving what came before applied and recorded.
 * Safe to run again after a crash at any point: a file that already matches and a package dpkg
 * already has at its version are recorded without being applied again.
 */
export async function applyResourceSteps(store: OwnedStore, steps: readonly ResourceStep[], ctx: ResourcePassContext): Promise<ReportResource[]> {
  const done: ReportResource[] = [];
  const owned = store.readOwned();
  const packages = new Map<ManagerName, PackageContext>();
  const packageContext = (name: ManagerName): PackageContext => {
    let c = packages.get(name);
    if (!c) {
      const manager = ctx.packageManagers[name];
      c = { manager, sources: ctx.sources.filter((s) => manager.isSource(s)), refreshed: false, selfUpgrade: ctx.selfUpgrade };
      packages.set(name, c);
    }
    return c;
  };
  for (const step of steps) {
    try {
      switch (step.kind) {
        case 'refuse':
          throw new AgentError('refused_resource', step.reason);
        case 'apply':
          done.push({ kind: 'file', path: step.resource.path, outcome: applyFile(store, owned, step.resource, ctx.contents, ctx.users) });
          break;
        case 'remove':
          done.push({ kind: 'file', path: step.path, outcome: removeFile(store, owned, step.path, step.original) });
          break;
        case 'install':
          done.push(await installPackage(store, owned, step.resource, packageContext(step.resource.manager)));
          break;
        case 'uninstall':
          done.push(await uninstallPackage(store, owned, step.name, step.purge, ctx.packageManagers[step.manager]));
          break;
        case 'forget':
          done.push(await forgetPackage(store, owned, step.name, ctx.packageManagers[step.manager]));
          break;
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const code: AgentErrorCode = err instanceof AgentError ? err.code : 'resource_failed';
      done.push(failedLine(step, message.slice(0, 2048)));
      throw new ResourcePassFailed(code, `${stepLabel(step)}: ${message}`, done, { cause: err });
    }
  }
  sweepOriginals(store, owned);
  return done;
}
