import type { AgentJson, FlorJson, ReteFile, ReteNode } from '#contracts/files';
import { agentJsonText, agentSync, florServices } from './compile.js';
import type { SyncSeconds } from './model.js';
import type { ParsedFile } from './parse-file.js';
import { dataPath } from './path-text.js';
import { presortedPretty } from './sorted-json.js';
import { isSsh, portKey, servicesOf, type SyncDecl } from './validate.js';

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
}

/**
 * What an edit of one rete file changed, when all it changed is where nodes listen, the ports and
 * protocols of their services and their own sync blocks. Undefined for any other change (a key added
 * or removed anywhere but a service's protocol or within a sync block, a node or a service added,
 * removed, renamed or reordered, any other value of a node, the mesh, defaults, groups, ACL rules,
 * resources or rollout), so a caller can take this as the whole difference or compile in full.
 *
 * A node's listen address is compiled into exactly two places: its own flor.json and, in every node
 * whose ACL names it, its entry in acl.peers. Its services' ports and protocols are compiled into its
 * own flor.json alone: ACL rules and every other node name a service by its name. Its sync block,
 * merged over the defaults', is compiled into its own agent.json alone. Which nodes are peers depends
 * on none of them.
 *
 * The file's schema checks them all, and validation's other checks of them are of the node alone.
 * Two services of one node may not share a port (undefined when they now do), and a server's service
 * on port 22 counts as SSH, which without the mesh's safety net is a warning (undefined when a service
 * moved there). A sync block's checks need the defaults: the caller makes them with nodeSync. So
 * edits found here that nodeSync passes leave the rete valid, with the warnings it had; whether those
 * of the edited file are still where they were is keptWarningsStay's to say.
 */
export function localEdits(before: ReteFile, after: ReteFile): LocalEdits | undefined {
  const keys = Object.keys(before);
  if (!same(keys.sort(), Object.keys(after).sort())) return undefined;
  for (const key of keys) if (key !== 'nodes' && !same(before[key as keyof ReteFile], after[key as keyof ReteFile])) return undefined;
  const [was, now] = [before.nodes ?? [], after.nodes ?? []];
  if (was.length !== now.length) return undefined;
  const edits: LocalEdits = { listens: new Map(), services: new Map(), syncs: new Map() };
  for (let i = 0; i < was.length; i++) {
    const [a, b] = [was[i], now[i]];
    if (same(a, b)) continue;
    if (!same(unedited(a), unedited(b))) return undefined;
    if (a.listen !== b.listen) edits.listens.set(b.name, b.listen);
    if (!same(a.sync, b.sync)) edits.syncs.set(b.name, b.sync);
    const [old, services] = [servicesOf(a), servicesOf(b)];
    if (same(old, services)) continue;
    if (new Set(services.map(portKey)).size < services.length) return undefined;
    if (services.some((s, j) => isSsh(s) && !isSsh(old[j]))) return undefined;
    edits.services.set(b.name, florServices(services));
  }
  return edits;
}

/** A node with what localEdits lets change taken out: its listen address, its sync block, and its services but their names. */
function unedited(n: ReteNode): unknown {
  return { ...n, listen: '', sync: undefined, services: n.services?.map((s) => s.name) };
}

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
 * A compiled agent.json with the node's sync (nodeSync's) put in. Undefined when the text is not
 * exactly what compile writes for the data it holds, or is another node's.
 */
export function editAgent(agentText: string, sync: SyncSeconds, self: string): string | undefined {
  const agent = parsedJson<AgentJson>(agentText);
  if (agent?.node !== self || typeof agent.sync !== 'object' || agent.sync === null || agentJsonText(agent) !== agentText) return undefined;
  return agentJsonText({ ...agent, sync: agentSync(sync) });
}

/** A warning as a compile's record keeps it: where it is, when the record keeps that. */
export interface KeptWarning {
  /** Its data path (pathText), and its line and column: absent in a record of an earlier retectl. */
  readonly path?: string;
  readonly line?: number;
  readonly col?: number;
}

/**
 * Whether the warnings a compile's record keeps for a file are what validating it again after these
 * edits would give. A warning is about a node's service (unused_service, no_safety_net) or a group
 * (unused_group, empty_group), placed where its data path leads, and what it says depends on that
 * node or group and on what the edits cannot change (the ACL, the mesh). So each stays as it was when
 * it is not about an edited node and its path still leads to the line and column it was at: false for
 * one of an edited node, one moved by lines the edit added or removed above it, or one kept without
 * its place. An edit that changes what a node's sets hold never makes a warning appear: localEdits
 * declines a service moved to SSH's port, and a sync block's checks are errors.
 */
export function keptWarningsStay(kept: readonly KeptWarning[], file: ParsedFile, edits: LocalEdits): boolean {
  const nodes = file.data.nodes ?? [];
  for (const w of kept) {
    const path = w.path === undefined ? undefined : dataPath(w.path);
    if (!path || w.line === undefined || w.col === undefined) return false;
    if (path[0] === 'nodes') {
      const name = typeof path[1] === 'number' ? nodes[path[1]]?.name : undefined;
      if (name === undefined || edits.listens.has(name) || edits.services.has(name) || edits.syncs.has(name)) return false;
    }
    const place = file.placeOf(path);
    if (place.line !== w.line || place.col !== w.col) return false;
  }
  return true;
}

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
