import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import { blobSizes } from '../../bundles/blobs.repository.js';
import { loadIneligible } from '../../fleet/ineligible.repository.js';
import { loadHeads } from '../../projections/heads.repository.js';
import { changedNodesOf, type ArtifactRef } from '../domain/ledger.decider.js';
import { LedgerWriter } from '../ledger-writer.js';
import { PublishTreeCommand } from './publish-tree.command.js';

@CommandHandler(PublishTreeCommand)
export class PublishTreeHandler implements ICommandHandler<PublishTreeCommand, PublishResponse> {
  constructor(private readonly writer: LedgerWriter) {}

  execute({ request, actor }: PublishTreeCommand): Promise<PublishResponse> {
    const nodes = new Map<string, ArtifactRef[]>(
      Object.entries(request.nodes).map(([node, { artifacts }]) => [node, Object.entries(artifacts).map(([name, sha256]) => ({ name, sha256 }))]),
    );
    return this.writer.write({ actor, expectedPosition: request.expected_position }, async (trx) => {
      const heads = await loadHeads(trx, request.prune ? 'all' : [...nodes.keys()]);
      // Only changed nodes need their blobs: an unchanged node of a 10,000-node tree costs a digest, not a read.
      const changed = changedNodesOf(nodes, heads);
      const sizes = await blobSizes(trx, changed.flatMap((n) => (nodes.get(n) ?? []).map((a) => a.sha256)));
      // Read under the ledger lock, so the flags the decision sees are those of the moment it is recorded.
      const ineligible = await loadIneligible(trx, changed);
      return {
        heads,
        command: {
          type: 'publish_tree',
          message: request.message,
          prune: request.prune ?? false,
          nodes,
          blobSizes: sizes,
          ineligible,
          allowIneligible: new Set(request.allow_ineligible ?? []),
        },
      };
    });
  }
}
