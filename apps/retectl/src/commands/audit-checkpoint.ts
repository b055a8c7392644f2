import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { outJson } from '../output.js';
import { servedCheckpoint } from '../audit/coordinator-reads.js';

export interface AuditCheckpointOptions extends ConnectionFlags {
  readonly json?: boolean;
}

/** The coordinator's current signed checkpoint: the note exactly as signed (keep it to verify later), or its fields with --json. */
export async function run(options: AuditCheckpointOptions): Promise<number> {
  const checkpoint = await servedCheckpoint(new CoordinatorClient(resolveConnection(options)));
  if (options.json) outJson(checkpoint);
  else process.stdout.write(checkpoint.note);
  return 0;
}
