import type { Role, TokenScope } from '#contracts';

export type Principal =
  /** `scope`: the nodes the token may act on or read; null: every node. */
  | { readonly kind: 'api'; readonly id: string; readonly name: string; readonly role: Role; readonly scope: TokenScope | null }
  | { readonly kind: 'node'; readonly node: string; readonly credentialId: string };

const RANK: Record<Role, number> = { reader: 1, publisher: 2, admin: 3 };

/** Roles nest: an admin may do what a publisher may, a publisher what a reader may. */
export function roleAllows(held: Role, needed: Role): boolean {
  return RANK[held] >= RANK[needed];
}

export function actorOf(p: Principal): string {
  return p.kind === 'api' ? p.name : `node:${p.node}`;
}

/** The scope a principal is held to: null when it may act on every node. */
export function scopeOf(p: Principal): TokenScope | null {
  return p.kind === 'api' ? p.scope : null;
}

/**
 * What the HTTP edge asks of whoever holds the credentials: the principal a bearer header stands
 * for, or a thrown 401. The identity module answers it; the edge (hardening, backup, audit routes)
 * knows no credential table.
 */
export interface Authenticator {
  authenticate(header: string | string[] | undefined): Promise<Principal>;
}
