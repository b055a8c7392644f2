import type { AgentJson, FlorJson, ReteFile, ReteNode } from '#contracts/files';
import { agentJsonText, agentSync, florServices } from './compile.js';
import type { SyncSeconds } from './model.js';
import type { ParsedFile } from './parse-file.js';
import { cmp, formatDiagnostic, placeText, type Diagnostic } from './diagnostics.js';
import { dataPath, pathText } from './path-text.js';
import { presortedPretty } from './sorted-json.js';
import { isSsh, noSafetyNetMessage, portKey, servicesOf, unusedServiceMessage, type SyncDecl } from './validate.js';

/**
 * What an edit changed, when it changed only what each node's own sets hold: where nodes listen, the
 * ports and protocols of their services, and their own sync blocks.
 */
export interface LocalEdits {
  /** Each node whose listen address moved, and its new one. */
  readonly listens: Map<string, string>;
  /** Each node whose services moved, and its services as its flor.json lists them. */
  readonly services: Map<string, FlorJson['services']>;
  /** Each node whose own sync block changed, and the block as it now is (undefined: removed). */
  readonly syncs: Map<string, SyncDecl>;
  /** Each node whose tags changed (as a set), with its tags before and now, each sorted and unique. */
  readonly tags: Map<string, { readonly was: readonly string[]; readonly now: readonly string[] }>;
}

/**
 * What an edit of one rete file changed, when all it changed is where nodes listen, their services,
 * their own sync blocks and their tags. Undefined for any other change (a key added or removed anywhere but in a
 * node's services, sync block or tags, a node added, removed, renamed or reordered, any other value of a
 * node, the mesh, defaults, groups, ACL rules, resources or rollout), so a caller can take this as the
 * whole difference or compile in full.
 *
 * A node's listen address is compiled into exactly two places: its own flor.json and, in every node
 * whose ACL names it, its entry in acl.peers. Its services are compiled into its own flor.json alone:
 * ACL rules and every other node name a service by its name, so a service added, or one removed that
 * no rule names, changes no other node. Its sync block, merged over the defaults', is compiled into
 * its own agent.json alone. Which nodes are peers depends on none of them. A node's tags are in no
 * compiled file: they are its labels, and what ACL rules, resources and the rollout pick by them; the
 * caller takes a tag edit only when no file names a tag it adds or removes (namedTags).
 *
 * The file's schema checks them all, and validation's other checks of them are of the node alone:
 * two services of one node may not share a name or a port (undefined when they now do). A sync
 * block's checks need the defaults: the caller makes them with nodeSync. What validation warns of a
 * node's services depends on the ACL rules and the mesh, which the edit did not change: editedWarnings
 * makes the edited file's warnings again from those the last compile gave, and says when it cannot (a
 * service removed that a rule may name among them).
 */
export function localEdits(before: ReteFile, after: ReteFile): LocalEdits | undefined {
  const keys = Object.keys(before);
  if (!same(keys.sort(), Object.keys(after).sort())) return undefined;
  for (const key of keys) if (key !== 'nodes' && !same(before[key as keyof ReteFile], after[key as keyof ReteFile])) return undefined;
  const [was, now] = [before.nodes ?? [], after.nodes ?? []];
  if (was.length !== now.length) return undefined;
  const edits: LocalEdits = { listens: new Map(), services: new Map(), syncs: new Map(), tags: new Map() };
  for (let i = 0; i < was.length; i++) {
    const [a, b] = [was[i], now[i]];
    if (same(a, b)) continue;
    if (!same(unedited(a), unedited(b))) return undefined;
    if (a.listen !== b.listen) edits.listens.set(b.name, b.listen);
    if (!same(a.sync, b.sync)) edits.syncs.set(b.name, b.sync);
    const [tagsWere, tags] = [tagSet(a), tagSet(b)];
    if (!same(tagsWere, tags)) edits.tags.set(b.name, { was: tagsWere, now: tags });
    const [old, services] = [servicesOf(a), servicesOf(b)];
    if (same(old, services)) continue;
    if (new Set(services.map((s) => s.name)).size < services.length) return undefined;
    if (new Set(services.map(portKey)).size < services.length) return undefined;
    edits.services.set(b.name, florServices(services));
  }
  return edits;
}

/** A node with what localEdits lets change taken out: its listen address, its sync block, its services and its tags. */
function unedited(n: ReteNode): unknown {
  return { ...n, listen: '', sync: undefined, services: undefined, tags: undefined };
}

/** A node's tags as its labels carry them: sorted, each once. */
const tagSet = (n: ReteNode): string[] => [...new Set(n.tags ?? [])].sort(cmp);

/**
 * A compiled flor.json with the edited nodes' addresses put in: its own and its peers' listen
 * addresses, and its own services. Undefined when the text is not exactly what compile writes for the
 * data it holds (so rewriting it would change more than the addresses), or when neither the node nor
 * its peers moved.
 */
export function editFlor(florText: string, edits: LocalEdits, self: string): string | undefined {
  const flor = parsedJson<FlorJson>(florText);
  if (flor?.node !== self || !Array.isArray(flor.acl?.peers) || presortedPretty(flor) !== florText) return undefined;
  let found = 0;
  const own = edits.listens.get(self);
  if (own !== undefined) {
    flor.listen = own;
    found++;
  }
  const services = edits.services.get(self);
  if (services !== undefined) {
    const ingress = ingressWith(flor.acl.ingress, flor.services, services);
    if (!ingress) return undefined;
    flor.acl.ingress = ingress;
    flor.services = services;
    found++;
  }
  for (const peer of flor.acl.peers) {
    const to = edits.listens.get(peer.node);
    if (to === undefined) continue;
    (peer as { listen: string }).listen = to;
    found++;
  }
  return found === 0 ? undefined : presortedPretty(flor);
}

/**
 * A node's ingress table with its services as they now are: each service has an entry, the nodes its
 * ACL lets reach it. No rule names a service added (the rules did not change), so its entry is empty;
 * one removed goes with its entry, which must be empty (no rule named it). Undefined when the table
 * does not have an entry for each service it had, or one removed is not empty. Keys in compile's order.
 */
function ingressWith(ingress: FlorJson['acl']['ingress'], had: FlorJson['services'], services: FlorJson['services']): FlorJson['acl']['ingress'] | undefined {
  if (typeof ingress !== 'object' || ingress === null || !Array.isArray(had)) return undefined;
  const kept = new Set(services.map((s) => s.name));
  const table = new Map<string, string[]>();
  for (const s of had) {
    const allow = Object.hasOwn(ingress, s.name) ? ingress[s.name] : undefined;
    if (!Array.isArray(allow)) return undefined;
    if (kept.has(s.name)) table.set(s.name, allow);
    else if (allow.length > 0) return undefined;
  }
  if (Object.keys(ingress).length !== had.length) return undefined;
  for (const s of services) if (!table.has(s.name)) table.set(s.name, []);
  return Object.fromEntries([...table].sort(([a], [b]) => cmp(a, b)));
}

/**
 * A compiled agent.json with the node's sync (nodeSync's) put in. Undefined when the text is not
 * exactly what compile writes for the data it holds, or is another node's.
 */
export function editAgent(agentText: string, sync: SyncSeconds, self: string): string | undefined {
  const agent = parsedJson<AgentJson>(agentText);
  if (agent?.node !== self || typeof agent.sync !== 'object' || agent.sync === null || agentJsonText(agent) !== agentText) return undefined;
  return agentJsonText({ ...agent, sync: agentSync(sync) });
}

/** A diagnostic as a compile's record keeps it: the file it is in, its text as printed, and where it is. */
export interface KeptDiagnostic {
  readonly file: string;
  readonly text: string;
  /** Its data path (pathText), and its line and column: absent in a record of an earlier retectl. */
  readonly path?: string;
  readonly line?: number;
  readonly col?: number;
}

/**
 * The warnings validating an edited file again would give, made from those a compile's record keeps
 * for it (`kept`, all warnings: a record is of a rete that validated), `before` being the file's data
 * they were given for. Undefined when that cannot be known, and the caller compiles in full.
 *
 * A warning is about a node's service (unused_service, no_safety_net) or a group (unused_group,
 * empty_group), placed where its data path leads, and whether it is given depends on that node or
 * group and on what the edits cannot change (the ACL rules, the mesh). One about anything but a
 * service of a node whose services changed says the same at the same path: it is placed again, where
 * that path now leads. Those of a node whose services changed are made again service by service:
 * a service kept under its name has the warnings it had (no_safety_net only while it is still SSH,
 * with its port as it now is); a new one no rule can name (the rules did not change, and named no
 * service it lacked), so it is unused. Undefined for a service removed that was not unused (a rule may
 * name it: the full compile reports the error), a server's service that became SSH (whether the mesh
 * names a safety net is not in the file), or a warning kept without its place (an earlier retectl's
 * record). In the order validation gives them.
 */
export function editedWarnings(kept: readonly KeptDiagnostic[], before: ReteFile, file: ParsedFile, edits: LocalEdits): KeptDiagnostic[] | undefined {
  const [was, now] = [before.nodes ?? [], file.data.nodes ?? []];
  const warnings: KeptDiagnostic[] = [];
  const at = (path: readonly PropertyKey[], code: string, message: string) => {
    const place = file.placeOf(path);
    const diagnostic = { severity: 'warning', code, ...place, path: pathText(path), message } as Diagnostic;
    warnings.push({ file: place.file, text: formatDiagnostic(diagnostic), path: diagnostic.path, line: place.line, col: place.col });
  };
  // What each node whose services changed was warned of, by its index and then its services' names.
  const warned = new Map<number, Map<string, Set<string>>>();
  for (const w of kept) {
    const path = w.path === undefined ? undefined : dataPath(w.path);
    if (!path || w.line === undefined || w.col === undefined) return undefined;
    const head = `${placeText({ file: w.file, line: w.line, col: w.col })}: `;
    if (!w.text.startsWith(head)) return undefined;
    const i = path[0] === 'nodes' && typeof path[1] === 'number' ? path[1] : undefined;
    if (i === undefined || !edits.services.has(now[i]?.name)) {
      const place = file.placeOf(path);
      warnings.push({ ...w, text: `${placeText(place)}: ${w.text.slice(head.length)}`, line: place.line, col: place.col });
      continue;
    }
    const service = path.length === 4 && path[2] === 'services' && typeof path[3] === 'number' ? was[i]?.services?.[path[3]]?.name : undefined;
    const code = CODE_AT_END.exec(w.text)?.[1];
    if (service === undefined || (code !== 'unused_service' && code !== 'no_safety_net')) return undefined;
    const byService = warned.get(i) ?? new Map<string, Set<string>>();
    warned.set(i, byService.set(service, (byService.get(service) ?? new Set()).add(code)));
  }
  for (let i = 0; i < now.length; i++) {
    const node = now[i];
    if (!edits.services.has(node.name)) continue;
    const had = warned.get(i) ?? new Map<string, Set<string>>();
    const old = new Map(servicesOf(was[i]).map((s) => [s.name, s]));
    const services = servicesOf(node);
    const names = new Set(services.map((s) => s.name));
    for (const name of old.keys()) if (!names.has(name) && !had.get(name)?.has('unused_service')) return undefined;
    for (const [j, s] of services.entries()) {
      const [before, codes] = [old.get(s.name), had.get(s.name)];
      if (node.kind === 'server' && isSsh(s) && !(before && isSsh(before))) return undefined;
      const path = ['nodes', i, 'services', j];
      if (!before || codes?.has('unused_service')) at(path, 'unused_service', unusedServiceMessage(node.name, s));
      if (isSsh(s) && codes?.has('no_safety_net')) at(path, 'no_safety_net', noSafetyNetMessage(node.name, s));
    }
  }
  // sortDiagnostics' order: by place, then code, then message (two warnings of one place: services an alias lists).
  return warnings.sort(
    (a, b) =>
      (a.line as number) - (b.line as number) ||
      (a.col as number) - (b.col as number) ||
      cmp(codeOf(a.text), codeOf(b.text)) ||
      cmp(messageOf(a), messageOf(b)),
  );
}

/** A kept warning's message: its text (formatDiagnostic's) without its place, path, severity and code. */
function messageOf(w: KeptDiagnostic): string {
  const head = `${placeText({ file: w.file, line: w.line as number, col: w.col as number })}: ${w.path ? `${w.path}: ` : ''}warning: `;
  return w.text.slice(head.length, w.text.length - ` [${codeOf(w.text)}]`.length);
}

/** The code a formatted diagnostic ends with (formatDiagnostic): `… [unused_service]`. */
const CODE_AT_END = /\[([a-z_]+)\]$/;
const codeOf = (text: string): string => CODE_AT_END.exec(text)?.[1] ?? '';

/** A compiled artifact's JSON, or undefined when it is not JSON. Whether it has the artifact's shape is the caller's to check. */
function parsedJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/**
 * Whether two parsed values are the same data: primitives, arrays and objects compared by value, keys
 * in any order. Not util.isDeepStrictEqual: a file's data read back from the parse cache may come from
 * another realm than a fresh parse (under a test runner), and prototypes do not matter here.
 */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const [ka, kb] = [Object.keys(a), Object.keys(b)];
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}
