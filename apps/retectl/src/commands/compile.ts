import { artifactsText, compileRete } from '#rete';
import { out, outJson } from '../output.js';
import { COMPILED_DIR, validateDir, writeCompiled } from '../rete-dir.js';

export interface CompileOptions {
  readonly dir: string;
  readonly json?: boolean;
}

/** Validates, then makes .flor/compiled match the rete and says which nodes changed. */
export async function run(options: CompileOptions): Promise<void> {
  const { rete } = validateDir(options.dir, options.json);
  const change = writeCompiled(options.dir, compileRete(rete));
  if (options.json) return outJson(change);
  for (const n of change.added) out(`+ ${n}: new`);
  for (const c of change.changed) out(`~ ${c.node}: ${artifactsText(c.artifacts)}`);
  for (const n of change.removed) out(`- ${n}: removed`);
  out(`compiled ${rete.nodes.length} nodes into ${COMPILED_DIR}: ${change.added.length} new, ${change.changed.length} changed, ${change.removed.length} removed, ${change.unchanged.length} unchanged`);
}
