import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import type { ArtifactRef } from '../domain/ledger.decider.js';
import { LedgerWriter } from '../ledger-writer.js';
import { PublishTreeCommand } from './publish-tree.command.js';

@CommandHandler(PublishTreeCommand)
export class PublishTreeHandler implements ICommandHandler<PublishTreeCommand, PublishResponse> {
  constructor(private readonly writer: LedgerWriter) {}

  execute({ request, actor, bodyDigest, admit }: PublishTreeCommand): Promise<PublishResponse> {
    const nodes = new Map<string, ArtifactRef[]>(
      Object.entries(request.nodes).map(([node, { artifacts }]) => [node, Object.entries(artifacts).map(([name, sha256]) => ({ name, sha256 }))]),
    );
    return this.writer.write(
      { actor, expectedPosition: request.expected_position, bodyDigest, ...(admit ? { admit } : {}) },
      {
        type: 'publish_tree',
        message: request.message,
        prune: request.prune ?? false,
        nodes,
        allowIneligible: request.allow_ineligible ?? [],
        ...(request.rollout ? { rollout: request.rollout } : {}),
        ...(request.supersede_rollout ? { supersedeRollout: request.supersede_rollout } : {}),
        ...(request.confirm_within !== undefined ? { confirmWithin: request.confirm_within } : {}),
      },
    );
  }
}
