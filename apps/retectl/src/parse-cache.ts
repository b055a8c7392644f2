import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import type { ReteFile } from '#contracts';
import { replaceFileUnsynced } from '#runtime';
import type { ParseCache } from '#rete';

const CACHE_DIR = join('.flor', 'cache', 'parsed');

/**
 * The rete's files as the last compile parsed them, kept in .flor/cache/parsed: one entry per file
 * content, named by the digest of its bytes and of the code that parsed it, so a retectl that parses
 * differently never reads another's entries. An entry that cannot be read is parsed afresh, never an
 * error. `save` writes the new entries and removes those this run did not use.
 */
export class DiskParseCache implements ParseCache {
  private readonly dir: string;
  /** The code that parses: entries of another retectl's are never read. */
  readonly parser = parserDigest();
  private readonly used = new Set<string>();
  private readonly fresh = new Map<string, ReteFile>();

  constructor(root: string) {
    this.dir = join(root, CACHE_DIR);
  }

  private name(digest: string): string {
    return createHash('sha256').update(this.parser).update(digest).digest('hex');
  }

  get(digest: string): ReteFile | undefined {
    const name = this.name(digest);
    this.used.add(name);
    try {
      return deserialize(readFileSync(join(this.dir, name))) as ReteFile;
    } catch {
      return undefined;
    }
  }

  /** Keeps the entry of a file this run did not need to read, as if it had. */
  keep(digest: string): void {
    this.used.add(this.name(digest));
  }

  set(digest: string, data: ReteFile): void {
    this.fresh.set(this.name(digest), data);
  }

  save(): void {
    mkdirSync(this.dir, { recursive: true });
    for (const [name, data] of this.fresh) replaceFileUnsynced(join(this.dir, name), serialize(data));
    for (const name of readdirSync(this.dir)) if (!this.used.has(name)) rmSync(join(this.dir, name), { force: true });
  }
}

/**
 * The code a cached parse depends on. In the packaged CLI that is its one bundle file; in a build,
 * the modules of the rete and contracts libraries (the parser and the schema) and the versions of the
 * yaml and zod packages.
 */
function parserDigest(): string {
  const h = createHash('sha256');
  let files: string[];
  try {
    files = [];
    for (const lib of ['#rete', '#contracts']) {
      const dir = dirname(fileURLToPath(import.meta.resolve(lib)));
      for (const name of readdirSync(dir).sort()) if (name.endsWith('.js')) files.push(join(dir, name));
    }
    const require = createRequire(import.meta.url);
    files.push(require.resolve('yaml/package.json'), require.resolve('zod/package.json'));
  } catch {
    files = [fileURLToPath(import.meta.url)];
  }
  for (const file of files) h.update(file).update(readFileSync(file));
  return h.digest('hex');
}
