import type { PublishResponse, ResourcesJson } from '#contracts';
import { artifactsText, formatResourceChange, type Plan, type PlanEntry, type ResourceChange } from '#rete';
import { plural } from './output.js';

/**
 * How plan and publish read on a fleet: the summary first, then the nodes that change, at most
 * LIST_LIMIT of them unless --all. A 10,000-node rete then prints a screenful, not 10,000 lines;
 * --json stays complete.
 */
export const LIST_LIMIT = 20;

export interface ListOptions {
  /** Every node, not the first LIST_LIMIT. */
  readonly all?: boolean;
  readonly limit?: number;
}

/** The first `limit` items rendered, then a line that counts the rest and says how to see them. */
export function bounded<T>(items: readonly T[], render: (item: T) => readonly string[], options: ListOptions = {}): string[] {
  const limit = options.all ? Infinity : (options.limit ?? LIST_LIMIT);
  const lines = items.slice(0, limit).flatMap((item) => [...render(item)]);
  if (items.length > limit) lines.push(`… and ${items.length - limit} more; --all to list them`);
  return lines;
}

/** `files 3 added, 1 changed; packages 1 added` over every node's resource changes, or undefined when none. */
export function resourcesTouched(entries: readonly PlanEntry[]): string | undefined {
  const counts = { file: { added: 0, changed: 0, removed: 0 }, package: { added: 0, changed: 0, removed: 0 } };
  let nodes = 0;
  for (const e of entries) {
    const changes: readonly ResourceChange[] = (e.action === 'new' || e.action === 'changed' ? e.resources : undefined) ?? [];
    if (changes.length > 0) nodes++;
    for (const c of changes) counts[c.kind][c.action]++;
  }
  if (nodes === 0) return undefined;
  const part = (what: string, c: { added: number; changed: number; removed: number }) => {
    const parts = (['added', 'changed', 'removed'] as const).filter((a) => c[a] > 0).map((a) => `${c[a]} ${a}`);
    return parts.length > 0 ? `${what} ${parts.join(', ')}` : undefined;
  };
  const parts = [part('files', counts.file), part('packages', counts.package)].filter((p) => p !== undefined);
  return `host resources on ${plural(nodes, 'node')}: ${parts.join('; ')}`;
}

/** One plan entry as the lines printed for it (its resource changes indented beneath). */
export function planEntryLines(e: PlanEntry): string[] {
  switch (e.action) {
    case 'new':
      return [
        `+ ${e.node}: new${e.readded ? ' (re-added after retirement)' : ''} (${artifactsText(e.artifacts)})`,
        ...(e.resources ?? []).map((r) => `    ${formatResourceChange(r)}`),
      ];
    case 'changed':
      return [
        `~ ${e.node}: changed (${artifactsText(e.artifacts)}) at version ${e.version}`,
        ...(e.resources ?? []).map((r) => `    ${formatResourceChange(r)}`),
      ];
    case 'unchanged':
      return [`  ${e.node}: unchanged at version ${e.version}`];
    case 'retired':
      return [`- ${e.node}: retired (not in the tree) at version ${e.version}`];
    case 'absent':
      return [`! ${e.node}: not in the tree, kept at version ${e.version} (--prune would retire it)`];
    default: {
      const unreachable: never = e;
      throw new TypeError(`unknown plan entry ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * The plan as printed: `plan: N new, N changed, N retired, N unchanged` (and the nodes kept outside
 * the tree), the host resources touched, `notes` (the ineligible nodes), then the nodes a publish
 * would change and those outside the tree, bounded; --all lists every node, the unchanged ones too.
 */
export function formatPlan({ entries }: Plan, options: ListOptions = {}, notes: readonly string[] = []): string[] {
  const count = (a: PlanEntry['action']) => entries.filter((e) => e.action === a).length;
  const changes = count('new') + count('changed') + count('retired');
  const absent = count('absent');
  const lines = [
    `plan: ${count('new')} new, ${count('changed')} changed, ${count('retired')} retired, ${count('unchanged')} unchanged${absent > 0 ? `, ${absent} kept outside the tree` : ''}${changes === 0 ? ': nothing to publish' : ''}`,
  ];
  const resources = resourcesTouched(entries);
  if (resources) lines.push(resources);
  lines.push(...notes);
  // The nodes that change first, then those kept outside the tree: a bound cuts the warnings, not the changes.
  const listed = options.all
    ? entries
    : [...entries.filter((e) => e.action === 'new' || e.action === 'changed' || e.action === 'retired'), ...entries.filter((e) => e.action === 'absent')];
  lines.push(...bounded(listed, planEntryLines, options));
  return lines;
}

/**
 * A publish's answer as printed: the summary line (its id and position, what changed, what was sent),
 * then `node from -> to` per changed node, bounded. `retired` tells the nodes the publish retires
 * (with --prune, those not in the tree), as `retectl retire` marks them.
 */
export function formatPublish(
  body: PublishResponse,
  sent: number,
  uploaded: number,
  options: ListOptions = {},
  retired: (node: string) => boolean = () => false,
): string[] {
  if (body.publish_id === null) return [`nothing changed: ${body.unchanged} unchanged`];
  const added = body.changed.filter((c) => c.from === 0).length;
  const gone = body.changed.filter((c) => retired(c.node)).length;
  const of = [...(added > 0 ? [`${added} new`] : []), ...(gone > 0 ? [`${gone} retired`] : [])];
  const lines = [
    `published ${body.publish_id} at position ${body.position}: ${body.changed.length} changed, ${body.unchanged} unchanged (${plural(sent, 'node')} sent, ${plural(uploaded, 'blob')} uploaded)${of.length > 0 ? `; of them ${of.join(', ')}` : ''}`,
  ];
  lines.push(...bounded(body.changed, (c) => [`${c.node} ${c.from} -> ${c.to}${retired(c.node) ? ' (retired)' : ''}`], options));
  return lines;
}

/**
 * The host resources a publish sets, over the nodes it changed: `host resources on 3 nodes: 12 files,
 * 2 packages (nginx, curl)`, from each changed node's resources.json as published (a retired node's
 * none), or undefined when no changed node declares any. What each added, changed or removed against
 * its head is `retectl plan`'s to say; this names what the publish touches.
 */
export function publishResourcesLine(changed: readonly { node: string }[], resourcesOf: (node: string) => ResourcesJson | undefined): string | undefined {
  let nodes = 0;
  let files = 0;
  const packages = new Map<string, number>();
  for (const { node } of changed) {
    const r = resourcesOf(node);
    if (!r || r.files.length + r.packages.length === 0) continue;
    nodes++;
    files += r.files.length;
    for (const p of r.packages) packages.set(p.name, (packages.get(p.name) ?? 0) + 1);
  }
  if (nodes === 0) return undefined;
  const names = [...packages.keys()].sort();
  const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? `, and ${names.length - 5} more` : '');
  const pkgCount = [...packages.values()].reduce((a, b) => a + b, 0);
  const parts = [...(files > 0 ? [plural(files, 'file')] : []), ...(pkgCount > 0 ? [`${plural(pkgCount, 'package')} (${shown})`] : [])];
  return `host resources on ${plural(nodes, 'changed node')}: ${parts.join(', ')}`;
}
