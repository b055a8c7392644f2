import { trustPins } from '#bundle';

/**
 * What the trust chain says of a key: `active`, listed by the newest trust version (its first key
 * signs); `retired`, rotated out by a later version, so it signs nothing new while what it signed
 * before stays good; `revoked`, listed as revoked, so agents refuse anything it signs.
 */
export type KeyState = 'active' | 'retired' | 'revoked';

/** One signing key, each step of its life with the trust version that took it and when that version was issued. */
export interface KeyHistoryEntry {
  readonly kid: string;
  readonly state: KeyState;
  /** The first version that listed it: from then on it signed. Null for a key revoked without ever being listed (one a failed rotation left in the key file). */
  readonly listed_version: number | null;
  readonly listed_at: string | null;
  /** The first later version that no longer listed it. */
  readonly retired_version: number | null;
  readonly retired_at: string | null;
  /** The version that revoked it. */
  readonly revoked_version: number | null;
  readonly revoked_at: string | null;
}

export interface KeyHistory {
  /** The newest trust version. */
  readonly trust_version: number;
  /** The key that signs bundles, checkpoints and the next trust version now: the first key of the newest version. */
  readonly signer: string;
  /** Every key the chain names, in the order it first named them. */
  readonly keys: readonly KeyHistoryEntry[];
}

/**
 * The keys of a trust chain (the documents `GET /v1/trust` serves), read only once the chain verifies
 * as an auditor's would: version 1 signed by its own key, every later one by a key of the one
 * before. Throws the chain's TrustChainError otherwise.
 */
export function keyHistory(documents: readonly string[]): KeyHistory {
  const { pins, issuedAt } = trustPins(documents);
  const versions = [...pins.keys()].sort((a, b) => a - b);
  const entries = new Map<string, { -readonly [K in keyof KeyHistoryEntry]: KeyHistoryEntry[K] }>();
  const entry = (kid: string) => {
    let e = entries.get(kid);
    if (!e) {
      e = { kid, state: 'active', listed_version: null, listed_at: null, retired_version: null, retired_at: null, revoked_version: null, revoked_at: null };
      entries.set(kid, e);
    }
    return e;
  };
  for (const version of versions) {
    const pin = pins.get(version)!;
    const at = issuedAt.get(version)!;
    for (const key of pin.keys) {
      const e = entry(key.kid);
      if (e.listed_version === null) Object.assign(e, { listed_version: version, listed_at: at });
    }
    for (const kid of pin.revoked) {
      const e = entry(kid);
      if (e.revoked_version === null) Object.assign(e, { revoked_version: version, revoked_at: at });
    }
    for (const e of entries.values()) {
      if (e.listed_version !== null && e.retired_version === null && !pin.keys.some((k) => k.kid === e.kid))
        Object.assign(e, { retired_version: version, retired_at: at });
    }
  }
  const head = pins.get(versions[versions.length - 1])!;
  const keys = [...entries.values()].map((e): KeyHistoryEntry => ({
    ...e,
    state: e.revoked_version !== null ? 'revoked' : e.retired_version !== null ? 'retired' : 'active',
  }));
  return { trust_version: head.version, signer: head.keys[0].kid, keys };
}
