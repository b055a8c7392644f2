import type { FlorJson, ReteFile } from '#contracts';
import { presortedPretty } from './sorted-json.js';

/**
 * What an edit of one rete file changed, when all it changed is where nodes listen: each moved node
 * and its new address. Undefined for any other change (a key added or removed anywhere, a node
 * added, removed, renamed or reordered, any other value of a node, the mesh, defaults, groups, ACL
 * rules, resources or rollout), so a caller can take this as the whole difference or compile in full.
 *
 * A node's listen address is compiled into exactly two places: its own flor.json and, in every node
 * whose ACL names it, its entry in acl.peers. It is checked by the file's schema alone, so a move
 * that parses is valid, and which nodes are peers does not depend on it.
 */
export function listenMoves(before: ReteFile, after: ReteFile): Map<string, string> | undefined {
  const keys = Object.keys(before);
  if (!same(keys.sort(), Object.keys(after).sort())) return undefined;
  for (const key of keys) if (key !== 'nodes' && !same(before[key as keyof ReteFile], after[key as keyof ReteFile])) return undefined;
  const [was, now] = [before.nodes ?? [], after.nodes ?? []];
  if (was.length !== now.length) return undefined;
  const moves = new Map<string, string>();
  for (let i = 0; i < was.length; i++) {
    const [a, b] = [was[i], now[i]];
    if (a.listen === b.listen) {
      if (!same(a, b)) return undefined;
      continue;
    }
    if (!same({ ...a, listen: '' }, { ...b, listen: '' })) return undefined;
    moves.set(b.name, b.listen);
  }
  return moves;
}

/**
 * A compiled flor.json with the moved nodes' addresses put in: its own, and its peers'. Undefined
 * when the text is not exactly what compile writes for the data it holds (so rewriting it would
 * change more than the addresses), or when a moved node is neither the node nor one of its peers.
 */
export function moveListens(florText: string, moves: ReadonlyMap<string, string>, self: string): string | undefined {
  let flor: FlorJson;
  try {
    flor = JSON.parse(florText) as FlorJson;
  } catch {
    return undefined;
  }
  if (flor.node !== self || !Array.isArray(flor.acl?.peers) || presortedPretty(flor) !== florText) return undefined;
  let found = 0;
  const own = moves.get(self);
  if (own !== undefined) {
    flor.listen = own;
    found++;
  }
  for (const peer of flor.acl.peers) {
    const to = moves.get(peer.node);
    if (to === undefined) continue;
    (peer as { listen: string }).listen = to;
    found++;
  }
  return found === 0 ? undefined : presortedPretty(flor);
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
