import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '#bundle';
import { RolloutPlan, type PublishRequest, type PublishResponse, type RolloutPlanInput } from '#contracts';
import type { Db } from '../../apps/coordinator/src/db/connect.js';
import { SigningKeyStore } from '../../apps/coordinator/src/core/signing-keys.js';
import { ledgerBlobs, putBlob } from '../../apps/coordinator/src/bundles/blobs.repository.js';
import { ineligibleNodes } from '../../apps/coordinator/src/fleet/ineligible.repository.js';
import { recordedPackages } from '../../apps/coordinator/src/packages/packages.repository.js';
import { checkpointSigner } from '../../apps/coordinator/src/trust/signing-trust.js';
import { LedgerWriter } from '../../apps/coordinator/src/ledger/ledger-writer.js';
import type { LedgerBlobs } from '../../apps/coordinator/src/ledger/ledger-ports.js';
import { PublishTreeHandler } from '../../apps/coordinator/src/ledger/commands/publish-tree.handler.js';
import { PublishTreeCommand } from '../../apps/coordinator/src/ledger/commands/publish-tree.command.js';
import { RollbackNodeHandler } from '../../apps/coordinator/src/ledger/commands/rollback-node.handler.js';
import { RollbackNodeCommand } from '../../apps/coordinator/src/ledger/commands/rollback-node.command.js';
import { RetireNodeHandler } from '../../apps/coordinator/src/identity/commands/retire-node.handler.js';
import { RetireNodeCommand } from '../../apps/coordinator/src/ledger/commands/retire-node.command.js';
import { readLedgerHead } from '../../apps/coordinator/src/ledger/index.js';
import { ReadModelProjection } from '../../apps/coordinator/src/projections/project.js';
import type { TestDatabase } from './databases.js';

/** The ledger's write side wired by hand over a real database: what the Nest module does, minus HTTP. */
export interface LedgerHarness {
  readonly db: Db & { url?: string };
  readonly keys: SigningKeyStore;
  readonly writer: LedgerWriter;
  /** Uploads each artifact's content as a blob and publishes the tree. Contents are strings. */
  publish(
    nodes: Record<string, Record<string, string>>,
    options?: {
      prune?: boolean;
      expected_position?: number;
      message?: string;
      allow_ineligible?: string[];
      rollout?: RolloutPlanInput;
      supersede_rollout?: string;
    },
  ): Promise<PublishResponse>;
  publishRequest(request: PublishRequest): Promise<PublishResponse>;
  rollback(node: string, toVersion: number, allowIneligible?: readonly string[]): Promise<PublishResponse>;
  retire(node: string): Promise<PublishResponse>;
  head(): Promise<{ position: number; hash: string }>;
  close(): Promise<void>;
}

export async function ledgerHarness(database: TestDatabase): Promise<LedgerHarness> {
  const db = await database.open();
  const dir = mkdtempSync(join(tmpdir(), 'florete-keys-'));
  const keys = await SigningKeyStore.open(join(dir, 'signing-keys.json'));
  const writer = writerOf(db, keys);
  const publishHandler = new PublishTreeHandler(writer);
  const harness: LedgerHarness = {
    db,
    keys,
    writer,
    async publish(nodes, options = {}) {
      const tree: PublishRequest['nodes'] = {};
      for (const [node, files] of Object.entries(nodes)) {
        const artifacts: Record<string, string> = {};
        for (const [name, content] of Object.entries(files)) {
          const bytes = Buffer.from(content, 'utf8');
          artifacts[name] = sha256Hex(bytes);
          await putBlob(db.kysely, artifacts[name], bytes);
        }
        tree[node] = { artifacts };
      }
      return harness.publishRequest({
        message: options.message ?? 'test publish',
        nodes: tree,
        prune: options.prune,
        expected_position: options.expected_position,
        allow_ineligible: options.allow_ineligible,
        ...(options.rollout ? { rollout: RolloutPlan.parse(options.rollout) } : {}),
        ...(options.supersede_rollout ? { supersede_rollout: options.supersede_rollout } : {}),
      });
    },
    publishRequest: (request) => publishHandler.execute(new PublishTreeCommand(request, 'tester')),
    rollback: (node, toVersion, allowIneligible) =>
      new RollbackNodeHandler(writer).execute(new RollbackNodeCommand(node, toVersion, `rollback ${node}`, 'tester', undefined, allowIneligible)),
    retire: (node) => new RetireNodeHandler(writer, db).execute(new RetireNodeCommand(node, `retire ${node}`, 'tester')),
    head: () => readLedgerHead(db.kysely),
    async close() {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
}

/** A ledger writer wired as the projections module wires it: its appends move the read models. */
export function writerOf(db: Db, keys: SigningKeyStore, blobs: LedgerBlobs = ledgerBlobs): LedgerWriter {
  const writer = new LedgerWriter(db, keys, checkpointSigner(keys), blobs, ineligibleNodes, recordedPackages);
  writer.projectInto(new ReadModelProjection());
  return writer;
}
