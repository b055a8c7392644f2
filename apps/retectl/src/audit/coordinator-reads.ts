import { CheckpointResponse, LedgerEventPage, TrustChainResponse, WitnessesResponse, type Witness } from '#contracts';
import type { CoordinatorClient } from '../client.js';

const GENESIS_HASH = '0'.repeat(64);

/** Every signed trust version, oldest first. */
export async function trustDocuments(client: CoordinatorClient): Promise<string[]> {
  const { body } = await client.call('GET', '/v1/trust', TrustChainResponse);
  return body.versions.map((v) => v.document);
}

export async function servedCheckpoint(client: CoordinatorClient): Promise<CheckpointResponse> {
  return (await client.call('GET', '/v1/ledger/checkpoint', CheckpointResponse)).body;
}

/** The ledger's chain hash at a position, or null when the ledger is shorter; looked up once each. */
export function ledgerHashes(client: CoordinatorClient): (position: number) => Promise<string | null> {
  const seen = new Map<number, Promise<string | null>>();
  return (position) => {
    if (position === 0) return Promise.resolve(GENESIS_HASH);
    let hash = seen.get(position);
    if (!hash) {
      hash = client
        .call('GET', `/v1/ledger/events?after=${position - 1}&limit=1`, LedgerEventPage)
        .then(({ body }) => (body.items[0]?.position === position ? body.items[0].hash : null));
      seen.set(position, hash);
    }
    return hash;
  };
}

/** Every node's reported checkpoint (GET /v1/ledger/witnesses, page by page), and the coordinator's own from the first page. */
export async function allWitnesses(client: CoordinatorClient): Promise<{ coordinator: WitnessesResponse['coordinator']; items: Witness[] }> {
  const items: Witness[] = [];
  let coordinator: WitnessesResponse['coordinator'] = null;
  let after: string | null = null;
  do {
    const query: string = `limit=500${after ? `&after=${after}` : ''}`;
    const { body }: { body: WitnessesResponse } = await client.call('GET', `/v1/ledger/witnesses?${query}`, WitnessesResponse);
    coordinator ??= body.coordinator;
    items.push(...body.items);
    after = body.next_after;
  } while (after !== null);
  return { coordinator, items };
}
