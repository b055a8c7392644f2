import { artifactsText, compileNodes, type ParseCache } from '#rete';
import { writeCompiled } from '../compiled-output.js';
import { out, outJson } from '../output.js';
import { DiskParseCache } from '../parse-cache.js';
import { lateProgress } from '../progress.js';
import { COMPILED_DIR, readSources, validateDir } from '../rete-dir.js';

export interface CompileOptions {
  readonly dir: string;
  readonly json?: boolean;
}

/**
 * Validates, then makes .flor/compiled match the rete and says which nodes changed and how long it
 * took. Files parsed before and nodes whose sets did not change cost next to nothing: a recompile
 * after one edit parses the edited file and writes the nodes it changed.
 */
export async function run(options: CompileOptions): Promise<void> {
  const started = performance.now();
  const progress = lateProgress();
  const sources = readSources(options.dir);
  const cache = new DiskParseCache(options.dir);
  progress.stage('parsing', sources.length);
  const counted: ParseCache = {
    get: (digest) => {
      progress.tick();
      return cache.get(digest);
    },
    set: (digest, data) => cache.set(digest, data),
  };
  let rete;
  let change;
  try {
    ({ rete } = validateDir(options.dir, options.json, { sources, cache: counted, validated: () => progress.done() }));
    // Only now: a compile that refuses the rete leaves the folder as it found it.
    cache.save();
    progress.stage('compiling', rete.nodes.length);
    change = writeCompiled(options.dir, compileNodes(rete), () => progress.tick());
  } finally {
    progress.done();
  }
  const seconds = (performance.now() - started) / 1000;
  if (options.json) return outJson({ ...change, seconds: Math.round(seconds * 1000) / 1000 });
  for (const n of change.added) out(`+ ${n}: new`);
  for (const c of change.changed) out(`~ ${c.node}: ${artifactsText(c.artifacts)}`);
  for (const n of change.removed) out(`- ${n}: removed`);
  const { files } = change;
  out(
    `compiled ${rete.nodes.length} nodes into ${COMPILED_DIR}: ${change.added.length} new, ${change.changed.length} changed, ${change.removed.length} removed, ${change.unchanged.length} unchanged; ` +
      `files: ${files.written} written, ${files.unchanged} unchanged, ${files.removed} removed; ${seconds.toFixed(2)} s`,
  );
}
