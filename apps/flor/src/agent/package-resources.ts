import type { OwnedFiles, PackageBefore, PackageResource, ReportPackageResource } from '#contracts';
import { AgentError } from '../errors.js';
import { isInstalledAt, type InstalledPackage, type PackageManager } from './package-manager.js';
import type { OwnedStore } from './file-resources.js';
import type { SelfUpgrade, SelfUpgradeStep } from './self-upgrade.js';

/** What the first touch of a package found: null when it was absent, so the agent is the one installing it. */
export function beforeOf(found: InstalledPackage): PackageBefore | null {
  return found.status === 'absent' ? null : { status: found.status, version: found.version ?? '' };
}

/**
 * What a pass does with one declared package, from whether dpkg already has it at the declared
 * version and what it is to the running agent (see selfUpgradeStep):
 * - `install`: install it, read it back (and for the agent's own package, run it once and hand over);
 * - `unchanged`: nothing, dpkg has it;
 * - `run-installed`: dpkg has the agent's own package at the declared version, but this process runs
 *   another one: something else installed it (an operator, or another agent process sharing this
 *   host's package, as in a test fleet on one machine). The installed binary is run once and handed
 *   over to as after an install of its own; otherwise this agent would keep running and reporting
 *   the old version until restarted by chance;
 * - `refused`: the agent's own package at a version whose self-check failed, still declared.
 */
export type PackageAction = 'install' | 'unchanged' | 'run-installed' | 'refused';

export function packageAction(installedAtDeclared: boolean, step: SelfUpgradeStep): PackageAction {
  if (step === 'refused') return 'refused';
  if (!installedAtDeclared) return 'install';
  return step === 'upgrade' ? 'run-installed' : 'unchanged';
}

/** The pass's package context: the manager, and the sources to refresh once, before the first install. */
export interface PackageContext {
  readonly manager: PackageManager;
  readonly sources: readonly string[];
  /** Set once the sources were refreshed in this pass. */
  refreshed: boolean;
  /** The agent's own package: another version of it is installed, run once, and handed over to. */
  readonly selfUpgrade?: SelfUpgrade;
}

/**
 * Brings one declared package to its version: the store entry first (with what was there before, on
 * the first touch only), then install unless dpkg already says installed at that version, then read
 * back, and only then the version recorded. After a crash at any point the next pass finds the entry,
 * keeps its `before`, and confirms by read-back what the interrupted install did instead of redoing it.
 */
export async function installPackage(store: OwnedStore, owned: OwnedFiles, r: PackageResource, ctx: PackageContext): Promise<ReportPackageResource> {
  const base = { kind: 'package', manager: r.manager, name: r.name, version: r.version } as const;
  const pm = ctx.manager;
  let now = await pm.query(r.name);
  if (!owned.packages[r.name]) {
    owned.packages[r.name] = { manager: r.manager, version: null, before: beforeOf(now) };
    store.writeOwned(owned);
  }
  const record = () => {
    if (owned.packages[r.name].version === r.version) return;
    owned.packages[r.name] = { ...owned.packages[r.name], version: r.version };
    store.writeOwned(owned);
  };
  const step = ctx.selfUpgrade?.step(r.name, r.version) ?? 'other';
  const self = step === 'other' ? undefined : ctx.selfUpgrade;
  const action = packageAction(isInstalledAt(now, r.version), step);
  if (action === 'refused') throw self!.refusedError(r.version);
  const refresh = async () => {
    if (!ctx.refreshed && ctx.sources.length > 0) {
      await pm.refresh(ctx.sources);
      ctx.refreshed = true;
    }
  };
  if (action === 'unchanged') {
    record();
    return { ...base, outcome: 'unchanged' };
  }
  if (action === 'run-installed') {
    // Not this process's install: the same checks as after one, so a broken binary is still caught and undone.
    await refresh();
    await self!.verify(pm, r.version, await self!.keep(pm));
    record();
    return { ...base, outcome: 'unchanged' };
  }
  const was = now.status === 'installed' ? now.version : null;
  await refresh();
  // Before another version of the agent goes in, the one running is kept to go back to.
  const kept = self ? await self.keep(pm) : null;
  try {
    await pm.install(r.name, r.version);
  } catch (err) {
    await forgetUntouched(store, owned, r.name, pm);
    throw err;
  }
  now = await pm.query(r.name);
  if (!isInstalledAt(now, r.version)) {
    throw new AgentError(
      'package_failed',
      `read back after installing: dpkg says ${now.status === 'absent' ? 'not installed' : `${now.status} ${now.version ?? ''}`.trim()}, not installed ${r.version}`,
    );
  }
  // Recorded only once the new agent ran: a failed one is replaced by the kept version again.
  if (self && kept) await self.verify(pm, r.version, kept);
  record();
  return { ...base, outcome: 'applied', was };
}

/**
 * After a failed install: an entry that never got a version, for a package dpkg still does not have
 * and did not have before, records nothing the agent did. Dropping it keeps a later set from
 * "removing" a package that was never there.
 */
async function forgetUntouched(store: OwnedStore, owned: OwnedFiles, name: string, pm: PackageManager): Promise<void> {
  const entry = owned.packages[name];
  if (!entry || entry.version !== null || entry.before !== null) return;
  if ((await pm.query(name)).status !== 'absent') return;
  delete owned.packages[name];
  store.writeOwned(owned);
}

/**
 * Removes a package the agent installed and the set dropped, reads back that dpkg no longer has it
 * installed (with `purge`, not at all), and only then forgets it. Already gone is fine: a crash after
 * the removal and before the forgetting lands here.
 */
export async function uninstallPackage(store: OwnedStore, owned: OwnedFiles, name: string, purge: boolean, pm: PackageManager): Promise<ReportPackageResource> {
  const found = await pm.query(name);
  const gone = (p: InstalledPackage) => p.status === 'absent' || (!purge && p.status === 'config-files');
  if (!gone(found)) {
    await pm.remove(name, purge);
    const back = await pm.query(name);
    if (!gone(back)) throw new AgentError('package_failed', `read back after removing: dpkg says ${back.status} ${back.version ?? ''}`.trim());
  }
  delete owned.packages[name];
  store.writeOwned(owned);
  return { kind: 'package', manager: pm.name, name, version: found.status === 'installed' ? found.version : null, outcome: 'removed' };
}

/** A package that was on the host before the agent: no longer the agent's, left installed as it is. */
export async function forgetPackage(store: OwnedStore, owned: OwnedFiles, name: string, pm: PackageManager): Promise<ReportPackageResource> {
  const found = await pm.query(name);
  delete owned.packages[name];
  store.writeOwned(owned);
  return { kind: 'package', manager: pm.name, name, version: found.status === 'installed' ? found.version : null, outcome: 'forgotten' };
}
