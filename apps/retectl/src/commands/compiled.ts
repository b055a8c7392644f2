import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cmp, decodeUtf8, digestsJson } from '#rete';
import { DIGESTS_JSON } from '#contracts/files';
import { tempNameFor } from '#runtime';
import { RetectlError, usageError } from '../errors.js';
import { out, outJson, plural } from '../output.js';
import { loadPublishable } from '../rete-dir.js';

export interface CompiledOptions {
  readonly dir: string;
  readonly node: string;
  /** One artifact's exact bytes on stdout, nothing else. */
  readonly artifact?: string;
  /** Write the node's folder there (its artifacts beside their digests.json) instead of printing. */
  readonly out?: string;
  readonly json?: boolean;
}

/**
 * One node's compiled set, as the last compile wrote it: printed (each artifact with its size and
 * sha256, as `retectl show` prints a version the coordinator holds), one artifact's bytes alone, or
 * written as a folder for `flor agent apply --set` on a first node. What is given is what a publish
 * would send: the compiled tree must still be the YAML's (else stale_compile, as for plan and publish),
 * and every file read is checked against the digests the compile recorded.
 */
export async function run(options: CompiledOptions): Promise<void> {
  if (options.artifact !== undefined && options.out !== undefined) throw usageError('give an artifact to print or --out, not both');
  const { tree } = loadPublishable(options.dir);
  if (!tree.has(options.node)) {
    const names = tree.names();
    const some = names.slice(0, 5).join(', ') + (names.length > 5 ? ', …' : '');
    throw new RetectlError(
      'not_found',
      `node ${options.node} is not in the compiled tree (${plural(names.length, 'node')}${names.length > 0 ? `: ${some}` : ''})`,
    );
  }
  const digests = tree.artifacts(options.node);
  const files = new Map([...digests].sort(([a], [b]) => cmp(a, b)).map(([name, sha]) => [name, tree.bytes(sha)] as const));
  const setDigest = tree.heads().setOf(options.node) as string;

  if (options.artifact !== undefined) {
    const bytes = files.get(options.artifact);
    if (bytes === undefined)
      throw new RetectlError('not_found', `node ${options.node} has no artifact ${options.artifact}: it has ${[...files.keys()].join(', ')}`);
    process.stdout.write(bytes);
    return;
  }

  const artifacts = [...files].map(([name, bytes]) => ({ name, sha256: digests.get(name) as string, size: bytes.byteLength }));
  if (options.out !== undefined) {
    writeFolder(options.out, options.node, files);
    if (options.json) return outJson({ node: options.node, set_digest: setDigest, out: options.out, artifacts });
    out(`wrote the set of node ${options.node} (${setDigest}) to ${options.out}: ${plural(files.size, 'artifact')} and ${DIGESTS_JSON}`);
    return;
  }

  const shown = artifacts.map((a) => {
    const bytes = files.get(a.name) as Buffer;
    const text = decodeUtf8(bytes);
    return { ...a, encoding: text.ok ? 'utf-8' : 'base64', content: text.ok ? text.text : bytes.toString('base64') };
  });
  if (options.json) return outJson({ node: options.node, set_digest: setDigest, artifacts: shown });
  out(`node ${options.node} as compiled, set ${setDigest}`);
  for (const a of shown) {
    out(`--- ${a.name} (${a.size} bytes, sha256 ${a.sha256})`);
    out(a.encoding === 'utf-8' ? a.content : `(binary, base64)\n${a.content}`);
  }
}

/**
 * The node's folder as `flor agent apply --set` reads it: its artifacts beside digests.json. Filled
 * under a temporary name beside `dir` and renamed into place whole, so a copy that stops halfway leaves
 * no folder to apply. A folder already there is refused unless empty: writing a set into one that
 * holds other files would mix two sets.
 */
function writeFolder(dir: string, node: string, files: ReadonlyMap<string, Buffer>): void {
  let entries: string[] | undefined;
  try {
    entries = readdirSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') throw new RetectlError('io', `--out ${dir} is a file: give a folder to create`);
    if (code !== 'ENOENT') throw new RetectlError('io', `--out ${dir}: ${(e as Error).message}`);
  }
  if (entries !== undefined && entries.length > 0)
    throw new RetectlError('io', `--out ${dir} is not empty (${entries.length} entries): give a new folder, so that no other set's files are mixed in`);
  // The bytes were each checked against the compile's digests as they were read (loadPublishable), so
  // the list worked out from them is the one the compile wrote, set digest and all.
  const { text } = digestsJson(node, files);
  try {
    mkdirSync(dirname(dir), { recursive: true });
  } catch (e) {
    throw new RetectlError('io', `--out ${dir}: ${(e as Error).message}`);
  }
  const stage = tempNameFor(dir);
  try {
    mkdirSync(stage);
    for (const [name, bytes] of files) writeFileSync(join(stage, name), bytes);
    writeFileSync(join(stage, DIGESTS_JSON), text);
    // rename(2) replaces an empty folder, and fails on one that another process filled meanwhile.
    renameSync(stage, dir);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw new RetectlError('io', `--out ${dir}: ${(e as Error).message}`);
  }
}
