import { canonicalJson, sha256Hex } from '#bundle';
import { ChainVerifier, chainHash, GENESIS_HASH, type StoredChainedEvent } from './hash-chain.js';

function chain(n: number): StoredChainedEvent[] {
  const out: StoredChainedEvent[] = [];
  let prev = GENESIS_HASH;
  for (let i = 1; i <= n; i++) {
    const fields = {
      position: i,
      stream: 'node:alpha',
      revision: i,
      type: 'node_set_stamped',
      data: { v: i },
      meta: { actor: 'ops' },
      recorded_at: '2026-11-29T00:00:00.000Z',
    };
    const hash = chainHash(prev, fields);
    out.push({ ...fields, prev_hash: prev, hash });
    prev = hash;
  }
  return out;
}

function verify(events: StoredChainedEvent[]) {
  const v = new ChainVerifier();
  for (const e of events) {
    const broken = v.push(e);
    if (broken) return broken;
  }
  return v.head();
}

describe('hash chain', () => {
  it('hashes the previous hash followed by the canonical event without its hashes', () => {
    const e = { position: 1, stream: 's', revision: 1, type: 't', data: { b: 1, a: 2 }, meta: {}, recorded_at: 'r' };
    const expected = sha256Hex(Buffer.concat([Buffer.from(GENESIS_HASH, 'hex'), Buffer.from(canonicalJson(e))]));
    expect(chainHash(GENESIS_HASH, e)).toBe(expected);
  });

  it('accepts an intact chain and reports its head', () => {
    const events = chain(5);
    expect(verify(events)).toEqual({ ok: true, position: 5, hash: events[4].hash });
  });

  it('reports an empty ledger as ok at position 0 with the genesis hash', () => {
    expect(verify([])).toEqual({ ok: true, position: 0, hash: GENESIS_HASH });
  });

  it('locates an altered event at its own position', () => {
    const events = chain(5);
    events[2] = { ...events[2], meta: { actor: 'mallory' } };
    expect(verify(events)).toEqual({ ok: false, position: 3, reason: expect.stringContaining('altered') });
  });

  it('locates a re-hashed event by the link after it', () => {
    const events = chain(5);
    const forged = { ...events[2], data: { v: 99 } };
    events[2] = { ...forged, hash: chainHash(forged.prev_hash, forged) };
    expect(verify(events)).toEqual({ ok: false, position: 4, reason: expect.stringContaining('prev_hash') });
  });

  it('locates a missing event as a gap', () => {
    const events = chain(5);
    events.splice(1, 1);
    expect(verify(events)).toEqual({ ok: false, position: 3, reason: expect.stringContaining('gap') });
  });
});
