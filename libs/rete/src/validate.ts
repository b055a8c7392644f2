import {
  ACL_SOURCE,
  ACL_TARGET,
  DEFAULT_CHECK_TIMEOUT,
  DEFAULT_EXPECT_STATUS,
  DEFAULT_POLL_INTERVAL,
  DEFAULT_SPLAY,
  parseDuration,
  type HealthCheck,
  type ReteErrorCode,
  type ReteFile,
  type ReteHealthCheck,
  type ReteNode,
  type ReteWarningCode,
} from '#contracts/files';
import { cmp, placeText, quoteValue, sortDiagnostics, type Diagnostic, type Place } from './diagnostics.js';
import { namedTags } from './labels.js';
import type { AclRuleModel, AclSource, Rete, ReteNodeModel, SyncSeconds } from './model.js';
import { parseFile, type Def, type ParseCache, type ParsedFile, type Source } from './parse-file.js';
import { pathText } from './path-text.js';
import { noSources, resolveResources, type ReadSource } from './resolve-resources.js';
import { resolveRollout } from './resolve-rollout.js';

export interface Validation {
  /** Present only when there is no error (warnings allowed). */
  readonly rete?: Rete;
  readonly diagnostics: readonly Diagnostic[];
  /** With the rete: every tag its files name (namedTags), which a compile's record keeps. */
  readonly namedTags?: ReadonlySet<string>;
}

/**
 * Validates a whole rete at once: every file's syntax and schema, then the merged definitions and
 * their cross-references. Files are taken in path order, so "defined twice" always names the same
 * first place whatever order they were read in. `readSource` gives the bytes of the files that file
 * resources name with `source:`; the caller decides what "inside the rete" means on its disk. With
 * a cache, a file parsed before is not parsed again.
 */
export function validateRete(sources: readonly Source[], readSource: ReadSource = noSources, cache?: ParseCache): Validation {
  const diagnostics: Diagnostic[] = [];
  const error = (code: ReteErrorCode, place: Place, path: readonly PropertyKey[], message: string) =>
    diagnostics.push({ severity: 'error', code, ...place, path: pathText(path), message });
  const warn = (code: ReteWarningCode, place: Place, path: readonly PropertyKey[], message: string) =>
    diagnostics.push({ severity: 'warning', code, ...place, path: pathText(path), message });

  const ordered = [...sources].sort((a, b) => cmp(a.file, b.file));
  if (ordered.length === 0) {
    error('no_files', { file: '.', line: 1, col: 1 }, [], 'the rete holds no *.yaml files');
    return { diagnostics };
  }
  const files: ParsedFile[] = [];
  let failedFiles = 0;
  for (const source of ordered) {
    const { parsed, diagnostics: found } = parseFile(source, cache);
    diagnostics.push(...found);
    if (parsed) files.push(parsed);
    else failedFiles++;
  }

  // Singletons and named definitions, merged across files; the second definition is the error.
  const single = <K extends 'mesh' | 'defaults' | 'rollout'>(key: K): Def<NonNullable<ReteFile[K]>> | undefined => {
    let first: Def<NonNullable<ReteFile[K]>> | undefined;
    for (const file of files) {
      const value = file.data[key];
      if (value === undefined) continue;
      const def = definition(value as NonNullable<ReteFile[K]>, file, [key]);
      if (first) error('duplicate_name', def.place, [key], `${key} is defined twice: here and at ${placeText(first.place)}`);
      else first = def;
    }
    return first;
  };
  const named = <T extends { name: string }>(key: 'nodes' | 'groups', what: string): Map<string, Def<T>> => {
    const defs = new Map<string, Def<T>>();
    for (const file of files) {
      ((file.data[key] ?? []) as unknown as T[]).forEach((value, i) => {
        const def = definition(value, file, [key, i]);
        const first = defs.get(value.name);
        if (first)
          error(
            'duplicate_name',
            file.placeOf([key, i, 'name']),
            [key, i, 'name'],
            `${what} "${value.name}" is defined twice: here and at ${placeText(first.place)}`,
          );
        else defs.set(value.name, def);
      });
    }
    return defs;
  };

  const mesh = single('mesh');
  const defaults = single('defaults');
  const nodeDefs = named<NonNullable<ReteFile['nodes']>[number]>('nodes', 'node');
  const groupDefs = named<NonNullable<ReteFile['groups']>[number]>('groups', 'group');
  const refsCheckable = failedFiles === 0;
  if (!mesh && refsCheckable) error('missing_mesh', { file: files[0].file, line: 1, col: 1 }, [], 'no file defines the mesh (mesh: {name, coordinator})');

  const defaultsAt: SyncAt | undefined = defaults && { sync: defaults.value.sync, path: defaults.path, file: defaults.file };
  const defaultSync = mergedSync(undefined, defaultsAt);
  if (defaults && seconds(defaultSync.splay) > seconds(defaultSync.poll_interval)) {
    const p = [...defaults.path, 'sync', 'splay'];
    error(
      'splay_too_long',
      defaults.file.placeOf(p),
      p,
      `splay ${quoteValue(defaultSync.splay)} is longer than the poll interval ${quoteValue(defaultSync.poll_interval)}`,
    );
  }

  // The defaults' own checks are judged once, with the defaults' window alone.
  if (defaultsAt) confirmationOf(defaultsAt, undefined, null, error);
  const nodes: Omit<ReteNodeModel, 'resources'>[] = [];
  const tags = new Set<string>();
  for (const [name, def] of nodeDefs) {
    const n = def.value;
    for (const t of n.tags ?? []) tags.add(t);
    const sync = nodeSync(name, { sync: n.sync, path: def.path, file: def.file }, defaultsAt, error);
    // Each service's index by its name and by its port: places are made only for a problem's report.
    const byName = new Map<string, number>();
    const byPort = new Map<string, number>();
    const at = (i: number, key: 'name' | 'port') => [...def.path, 'services', i, key];
    const services = servicesOf(n);
    services.forEach((s, i) => {
      const seen = byName.get(s.name);
      if (seen !== undefined)
        error(
          'duplicate_service',
          def.file.placeOf(at(i, 'name')),
          at(i, 'name'),
          `node "${name}" publishes service "${s.name}" twice: here and at ${placeText(def.file.placeOf(at(seen, 'name')))}`,
        );
      else byName.set(s.name, i);
      const key = portKey(s);
      const taken = byPort.get(key);
      if (taken !== undefined)
        error(
          'duplicate_port',
          def.file.placeOf(at(i, 'port')),
          at(i, 'port'),
          `node "${name}" already publishes a service on ${key} at ${placeText(def.file.placeOf(at(taken, 'port')))}`,
        );
      else byPort.set(key, i);
    });
    nodes.push({
      name,
      kind: n.kind,
      listen: n.listen,
      tags: uniqueSorted(n.tags ?? []),
      sync,
      services,
      place: def.place,
    });
  }

  const groups = new Map<string, readonly string[]>();
  for (const [name, def] of groupDefs) {
    def.value.members.forEach((m, i) => {
      const p = [...def.path, 'members', i];
      if (refsCheckable && !nodeDefs.has(m)) error('unknown_node', def.file.placeOf(p), p, `group "${name}" names node "${m}", which no file defines`);
    });
    if (def.value.members.length === 0) warn('empty_group', def.place, def.path, `group "${name}" has no members`);
    groups.set(name, uniqueSorted(def.value.members));
  }

  const rolloutDef = single('rollout');
  const rollout =
    rolloutDef && resolveRollout({ def: rolloutDef, from: { tagsOf: new Map(nodes.map((n) => [n.name, n.tags])), groups }, refsCheckable, error });

  const resources = resolveResources({ files, nodeDefs, groups, refsCheckable, readSource, error });

  // A group that only picks the nodes of a resources entry is in use as surely as one in an ACL rule.
  const usedGroups = new Set<string>(files.flatMap((file) => (file.data.resources ?? []).flatMap((r) => r.select.groups ?? [])));
  for (const g of rolloutDef?.value.canary?.groups ?? []) usedGroups.add(g);
  const allowed = new Set<string>();
  const acl: AclRuleModel[] = [];
  for (const file of files) {
    (file.data.acl ?? []).forEach((rule, r) => {
      const from: AclSource[] = rule.from.map((text, i) => {
        const m = ACL_SOURCE.exec(text) as RegExpExecArray;
        const source: AclSource = { kind: (m[1] as 'group' | 'tag' | undefined) ?? 'node', name: m[2] };
        if (source.kind === 'group') usedGroups.add(source.name);
        if (!refsCheckable) return source;
        const known = source.kind === 'node' ? nodeDefs.has(source.name) : source.kind === 'group' ? groupDefs.has(source.name) : tags.has(source.name);
        if (known) return source;
        const p = ['acl', r, 'from', i];
        if (source.kind === 'node') error('unknown_node', file.placeOf(p), p, `no node is named "${source.name}"`);
        else if (source.kind === 'group') error('unknown_group', file.placeOf(p), p, `no group is named "${source.name}"`);
        else error('unknown_tag', file.placeOf(p), p, `no node carries the tag "${source.name}"`);
        return source;
      });
      const to = rule.to.map((text, i) => {
        const m = ACL_TARGET.exec(text) as RegExpExecArray;
        const target = { node: m[1], service: m[2] };
        allowed.add(`${target.node}:${target.service}`);
        const node = nodeDefs.get(target.node);
        if (!refsCheckable) return target;
        if (node && (node.value.services ?? []).some((s) => s.name === target.service)) return target;
        const p = ['acl', r, 'to', i];
        if (!node) error('unknown_node', file.placeOf(p), p, `no node is named "${target.node}"`);
        else {
          const offered = (node.value.services ?? []).map((s) => s.name);
          error(
            'unknown_service',
            file.placeOf(p),
            p,
            `node "${target.node}" publishes no service "${target.service}"${offered.length ? ` (it publishes ${offered.join(', ')})` : ' (it publishes none)'}`,
          );
        }
        return target;
      });
      acl.push({ from, to });
    });
  }

  // Warnings from half a rete would only be noise: they wait until every file parses.
  if (!refsCheckable) return { diagnostics: sortDiagnostics(diagnostics.filter((d) => d.severity === 'error')) };
  for (const [name, def] of nodeDefs) {
    (def.value.services ?? []).forEach((s, i) => {
      const p = [...def.path, 'services', i];
      if (!allowed.has(`${name}:${s.name}`)) warn('unused_service', def.file.placeOf(p), p, unusedServiceMessage(name, s));
    });
  }
  for (const [name, def] of groupDefs) {
    if (!usedGroups.has(name)) warn('unused_group', def.place, def.path, `group "${name}" is not used by any ACL rule`);
  }
  // A publish activates on every node with no confirmation window: if SSH over the mesh is how the
  // operators reach a server, one bad publish can lock them out. Devices (laptops) are within reach.
  if (mesh && mesh.value.safety_net === undefined) {
    for (const [name, def] of nodeDefs) {
      if (def.value.kind !== 'server') continue;
      (def.value.services ?? []).forEach((s, i) => {
        if (!isSsh(s)) return;
        const p = [...def.path, 'services', i];
        warn('no_safety_net', def.file.placeOf(p), p, noSafetyNetMessage(name, s));
      });
    }
  }

  const sorted = sortDiagnostics(diagnostics);
  if (sorted.some((d) => d.severity === 'error') || !mesh) return { diagnostics: sorted };
  return {
    rete: {
      mesh: mesh.value,
      nodes: nodes.map((n) => ({ ...n, resources: resources.get(n.name) ?? { files: [], packages: [] } })).sort((a, b) => cmp(a.name, b.name)),
      groups,
      acl,
      ...(rollout ? { rollout } : {}),
      ...(defaults ? { defaults: defaults.value } : {}),
    },
    diagnostics: sorted,
    namedTags: namedTags(files.map((f) => f.data)),
  };
}

/** A `sync:` block as a rete file writes it, in a node or in the defaults. */
export type SyncDecl = NonNullable<ReteFile['defaults']>['sync'];
/** A sync block, where it is written: a problem with it is reported there. */
export interface SyncAt {
  readonly sync: SyncDecl;
  readonly path: readonly PropertyKey[];
  readonly file: { placeOf(path: readonly PropertyKey[]): Place };
}

type ErrorSink = (code: ReteErrorCode, place: Place, path: readonly PropertyKey[], message: string) => void;

/** A definition where a file writes it; its place is found when first read (only a problem's report reads it). */
function definition<T>(value: T, file: ParsedFile, path: readonly PropertyKey[]): Def<T> {
  return {
    value,
    file,
    path,
    get place() {
      return file.placeOf(path);
    },
  };
}

/**
 * A node's sync as its agent.json carries it: its own values over the defaults', durations in seconds.
 * Its errors are the node's own: a splay longer than the poll interval it gives itself, and those of
 * its confirmation window and health checks (confirmationOf). The defaults' own are reported once, by
 * validateRete.
 */
export function nodeSync(name: string, own: SyncAt, defaults: SyncAt | undefined, error: ErrorSink): SyncSeconds {
  const sync = mergedSync(own.sync, defaults);
  if (own.sync && seconds(sync.splay) > seconds(sync.poll_interval)) {
    const p = [...own.path, 'sync', own.sync.splay !== undefined ? 'splay' : 'poll_interval'];
    error('splay_too_long', own.file.placeOf(p), p, `splay ${quoteValue(sync.splay)} is longer than the poll interval ${quoteValue(sync.poll_interval)}`);
  }
  const confirm = confirmationOf(own, defaults, name, error);
  return { poll_interval: seconds(sync.poll_interval), splay: seconds(sync.splay), watch: sync.watch, ...confirm };
}

/** The poll interval, splay and watch a sync block gives, over the defaults' and then the built-in ones. */
function mergedSync(own: SyncDecl, defaults: SyncAt | undefined): { poll_interval: string; splay: string; watch: boolean } {
  return {
    poll_interval: own?.poll_interval ?? defaults?.sync?.poll_interval ?? DEFAULT_POLL_INTERVAL,
    splay: own?.splay ?? defaults?.sync?.splay ?? DEFAULT_SPLAY,
    watch: own?.watch ?? defaults?.sync?.watch ?? true,
  };
}

/**
 * A node's confirmation window and health checks: its own `sync` values override the defaults',
 * and its list of checks replaces theirs as a whole. Checks need a window to run under, and their
 * names must be unique, since a revert's reason names the check that failed.
 */
function confirmationOf(
  own: SyncAt,
  defaults: SyncAt | undefined,
  node: string | null,
  error: ErrorSink,
): Pick<SyncSeconds, 'confirm_within' | 'health_checks'> {
  const window = own.sync?.confirm_within ?? defaults?.sync?.confirm_within;
  const from = own.sync?.health_checks !== undefined || !defaults ? own : defaults;
  const checks = from.sync?.health_checks ?? [];
  const checksPath = [...from.path, 'sync', 'health_checks'];
  // Where the list is written is where its errors are reported: once, not once per node inheriting it.
  const reports = from === own;
  if (reports && checks.length > 0 && window === undefined) {
    error(
      'bad_health_check',
      from.file.placeOf(checksPath),
      checksPath,
      `${node === null ? 'the defaults have' : `node "${node}" has`} health checks but no confirmation window: set sync.confirm_within, the time they have to pass`,
    );
  }
  const seen = new Map<string, number>();
  checks.forEach((c, i) => {
    const first = seen.get(c.name);
    const p = [...checksPath, i, 'name'];
    if (first === undefined) seen.set(c.name, i);
    else if (reports) error('duplicate_name', from.file.placeOf(p), p, `health check "${c.name}" is named twice in this list`);
  });
  if (window === undefined) return {};
  return { confirm_within: seconds(window), ...(checks.length > 0 ? { health_checks: checks.map(compiledCheck) } : {}) };
}

function compiledCheck(c: ReteHealthCheck): HealthCheck {
  const timeout = seconds(c.timeout ?? DEFAULT_CHECK_TIMEOUT);
  if (c.command !== undefined) return { name: c.name, kind: 'command', command: c.command, timeout };
  if (c.tcp !== undefined) return { name: c.name, kind: 'tcp', address: c.tcp, timeout };
  return { name: c.name, kind: 'http', url: c.http as string, expect_status: c.expect_status ?? DEFAULT_EXPECT_STATUS, timeout };
}

/** A node's services as the rete's model holds them: the protocol filled in. */
export function servicesOf(n: ReteNode): ReteNodeModel['services'] {
  return (n.services ?? []).map((s) => ({ name: s.name, port: s.port, protocol: s.protocol ?? 'tcp' }));
}

/** What the unused_service warning says of a service no ACL rule names. */
export const unusedServiceMessage = (node: string, s: { name: string }): string => `no ACL rule allows anyone to reach ${node}:${s.name}`;

/** What the no_safety_net warning says of a server's SSH service in a mesh with no safety net. */
export const noSafetyNetMessage = (node: string, s: { name: string; port: number }): string =>
  `server "${node}" publishes SSH (service "${s.name}", port ${s.port}) over the mesh, and the rete notes no other way in: a bad publish activates with no confirmation, so keep an out-of-band path and name it in mesh.safety_net`;

/** Where a service listens on its node, as `9100/tcp`: two services of one node may not share it. */
export const portKey = (s: ReteNodeModel['services'][number]): string => `${s.port}/${s.protocol}`;

/** SSH as the rule sees it: a service on port 22, or one named ssh, whatever port it moved to. */
export const isSsh = (s: { name: string; port: number }): boolean => s.port === 22 || s.name === 'ssh';

/** Durations already read: a fleet's nodes repeat a few texts (`5m`, `30s`) 100,000 times over. */
const durationSeconds = new Map<string, number>();
const DURATIONS_KEPT = 1024;

function seconds(duration: string): number {
  let s = durationSeconds.get(duration);
  if (s === undefined) {
    s = parseDuration(duration) ?? 0;
    if (durationSeconds.size < DURATIONS_KEPT) durationSeconds.set(duration, s);
  }
  return s;
}

function uniqueSorted(list: readonly string[]): string[] {
  return [...new Set(list)].sort(cmp);
}
