import { MAX_REPORT_BYTES, type OwnedCopy, type OwnedFiles, type ReportRequest } from '#contracts';
import { isInstalledAt, type InstalledPackage } from './package-manager.js';
import { ownPathAt } from './resource-plan.js';

/**
 * What the agent tells the coordinator it owns: the confirmed entries of its record. An entry still
 * without a digest or a version was written before a write or an install that never read back, so
 * nothing says what is on the host for it; the copy of an original stays in the state dir.
 */
export function ownedCopyOf(owned: OwnedFiles): OwnedCopy {
  const files: OwnedCopy['files'] = {};
  for (const [path, f] of Object.entries(owned.files)) if (f.sha256 !== null) files[path] = { sha256: f.sha256, original: f.original !== null };
  const packages: OwnedCopy['packages'] = {};
  for (const [name, p] of Object.entries(owned.packages)) if (p.version !== null) packages[name] = { manager: p.manager, version: p.version, before: p.before };
  return { files, packages };
}

/**
 * The report with the copy when both fit in one report body, else the report alone: a report the
 * coordinator refuses would lose the node's status too. The coordinator then keeps the copy it had,
 * which adoptOwned makes safe to be stale: an entry the host no longer shows as reported is not taken.
 */
export function withOwnedCopy(report: ReportRequest, copy: OwnedCopy, limit = MAX_REPORT_BYTES): ReportRequest {
  const full = { ...report, owned: copy };
  return Buffer.byteLength(JSON.stringify(full)) <= limit ? full : report;
}

/** What the host holds now for each entry of a recovery copy. */
export interface HostNow {
  /** sha256 of the regular file at each path; null when there is none (missing, a directory, a link). */
  readonly files: ReadonlyMap<string, string | null>;
  /** What the package database says of each package. */
  readonly packages: ReadonlyMap<string, InstalledPackage>;
}

export interface Adoption {
  /** The record to write: only what was taken back. */
  readonly owned: OwnedFiles;
  /** What was left to the host, and why: `file /etc/x` or `package hello=1.0`, then the reason. */
  readonly left: readonly { readonly resource: string; readonly reason: string }[];
}

/**
 * Which entries of a recovery copy an agent with a lost store takes back into its record. Taking one
 * back means the next set that no longer declares it removes it, so the rule only takes what is
 * certainly still the agent's doing, and leaves the rest to the host:
 * - a file only when the regular file at its path still has the reported sha256: anything else there
 *   was put by someone after the agent, and is not the agent's to delete;
 * - never a file that replaced one the host had (`original`): the copy that removal puts back was in
 *   the lost store, and removing the file without it would destroy what that path held, so the file
 *   stays as it is, as a package that predates the agent is forgotten rather than removed;
 * - never a path of the agent's own (state dir, install dir, config), which no resource may touch;
 * - a package only when dpkg says installed at exactly the reported version, with what dpkg had before
 *   the agent as reported (so removal purges what the agent installed and leaves what predates it).
 * A path or package the copy does not name is not the agent's either way.
 */
export function adoptOwned(copy: OwnedCopy, now: HostNow, ownPaths: readonly string[]): Adoption {
  const owned: OwnedFiles = { files: {}, packages: {} };
  const left: { resource: string; reason: string }[] = [];
  for (const path of Object.keys(copy.files).sort()) {
    const entry = copy.files[path];
    const leave = (reason: string) => left.push({ resource: `file ${path}`, reason });
    const own = ownPathAt(path, ownPaths);
    const sha = now.files.get(path) ?? null;
    if (own !== undefined) leave(`it is the agent's own ${own}`);
    else if (entry.original) leave('it replaced a file the host had, whose copy was in the lost store: left as it is');
    else if (sha === null) leave('no regular file is there now');
    else if (sha !== entry.sha256) leave(`its sha256 is ${sha}, not the reported ${entry.sha256}: changed since`);
    else owned.files[path] = { sha256: entry.sha256, original: null };
  }
  for (const name of Object.keys(copy.packages).sort()) {
    const entry = copy.packages[name];
    const found = now.packages.get(name) ?? { status: 'absent', version: null };
    if (isInstalledAt(found, entry.version)) {
      owned.packages[name] = { manager: entry.manager, version: entry.version, before: entry.before };
    } else {
      const is = found.status === 'absent' ? 'not installed' : `${found.status} ${found.version ?? ''}`.trim();
      left.push({ resource: `package ${name}=${entry.version}`, reason: `dpkg says ${is}, not installed ${entry.version}` });
    }
  }
  return { owned, left };
}
