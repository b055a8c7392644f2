import { FILE_ARTIFACT, type FileResource, type PackageResource, type ResourcesJson } from '#contracts/files';
import { cmp } from './diagnostics.js';

/** What changed on a file that stays: its bytes (digests would be noise to an operator) or an attribute, from → to. */
export type FileAttributeChange = { readonly field: 'content' } | { readonly field: 'mode' | 'owner' | 'group'; readonly from: string; readonly to: string };

export type ResourceChange =
  | { readonly kind: 'file'; readonly action: 'added' | 'removed'; readonly path: string }
  | { readonly kind: 'file'; readonly action: 'changed'; readonly path: string; readonly changes: readonly FileAttributeChange[] }
  | {
      readonly kind: 'package';
      readonly action: 'added' | 'removed';
      readonly manager: PackageResource['manager'];
      readonly name: string;
      readonly version: string;
    }
  | {
      readonly kind: 'package';
      readonly action: 'changed';
      readonly manager: PackageResource['manager'];
      readonly name: string;
      readonly from: string;
      readonly to: string;
    };

/**
 * How a node's host resources change from one resources.json to another (undefined: the set has
 * none): files by path, then packages by name, each sorted so a plan reads the same every time.
 * Order alone is not a change: it only says how the agent goes through the list.
 */
export function diffResources(before: ResourcesJson | undefined, after: ResourcesJson | undefined): ResourceChange[] {
  const out: ResourceChange[] = [];
  const oldFiles = new Map((before?.files ?? []).map((f) => [f.path, f]));
  const newFiles = new Map((after?.files ?? []).map((f) => [f.path, f]));
  for (const path of [...new Set([...oldFiles.keys(), ...newFiles.keys()])].sort(cmp)) {
    const a = oldFiles.get(path);
    const b = newFiles.get(path);
    if (!a) out.push({ kind: 'file', action: 'added', path });
    else if (!b) out.push({ kind: 'file', action: 'removed', path });
    else {
      const changes = fileChanges(a, b);
      if (changes.length > 0) out.push({ kind: 'file', action: 'changed', path, changes });
    }
  }
  const key = (p: PackageResource) => `${p.name}\u0000${p.manager}`;
  const oldPackages = new Map((before?.packages ?? []).map((p) => [key(p), p]));
  const newPackages = new Map((after?.packages ?? []).map((p) => [key(p), p]));
  for (const k of [...new Set([...oldPackages.keys(), ...newPackages.keys()])].sort(cmp)) {
    const a = oldPackages.get(k);
    const b = newPackages.get(k);
    if (!a)
      out.push({
        kind: 'package',
        action: 'added',
        manager: (b as PackageResource).manager,
        name: (b as PackageResource).name,
        version: (b as PackageResource).version,
      });
    else if (!b) out.push({ kind: 'package', action: 'removed', manager: a.manager, name: a.name, version: a.version });
    else if (a.version !== b.version) out.push({ kind: 'package', action: 'changed', manager: a.manager, name: a.name, from: a.version, to: b.version });
  }
  return out;
}

function fileChanges(a: FileResource, b: FileResource): FileAttributeChange[] {
  const changes: FileAttributeChange[] = [];
  if (a.content.sha256 !== b.content.sha256) changes.push({ field: 'content' });
  for (const field of ['mode', 'owner', 'group'] as const) if (a[field] !== b[field]) changes.push({ field, from: a[field], to: b[field] });
  return changes;
}

/** apt is the default manager and goes unsaid; any other would show as `dnf:nginx`. */
const packageLabel = (c: { manager: PackageResource['manager']; name: string }): string => (c.manager === 'apt' ? c.name : `${String(c.manager)}:${c.name}`);

/**
 * One line per change, as a plan prints it: `+ file /etc/apt/sources.list.d/florete.list`,
 * `~ file /etc/motd (content, mode 0644 -> 0600)`, `~ package florete-agent 0.1.0 -> 0.2.0`, `- package foo`.
 */
export function formatResourceChange(c: ResourceChange): string {
  switch (c.kind) {
    case 'file':
      switch (c.action) {
        case 'added':
          return `+ file ${c.path}`;
        case 'removed':
          return `- file ${c.path}`;
        case 'changed':
          return `~ file ${c.path} (${c.changes.map((x) => (x.field === 'content' ? 'content' : `${x.field} ${x.from} -> ${x.to}`)).join(', ')})`;
        default:
          return unreachable(c);
      }
    case 'package':
      switch (c.action) {
        case 'added':
          return `+ package ${packageLabel(c)} ${c.version}`;
        case 'removed':
          return `- package ${packageLabel(c)}`;
        case 'changed':
          return `~ package ${packageLabel(c)} ${c.from} -> ${c.to}`;
        default:
          return unreachable(c);
      }
    default:
      return unreachable(c);
  }
}

/**
 * Artifact names for a human: the named artifacts, then how many file contents, whose digests say
 * nothing to a reader and whose changes the resource lines already show by path.
 */
export function artifactsText(names: readonly string[]): string {
  const contents = names.filter((n) => FILE_ARTIFACT.test(n)).length;
  const named = names.filter((n) => !FILE_ARTIFACT.test(n));
  return [...named, ...(contents > 0 ? [`${contents} file content${contents === 1 ? '' : 's'}`] : [])].join(', ');
}

function unreachable(value: never): never {
  throw new TypeError(`unknown resource change ${JSON.stringify(value)}`);
}
