import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE } from '#rete';
import { RetectlError } from '../errors.js';
import { out, outJson } from '../output.js';

export interface InitOptions {
  readonly dir: string;
  readonly json?: boolean;
}

/** Writes the example rete into an empty (or new) folder; never overwrites an operator's files. */
export async function run(options: InitOptions): Promise<void> {
  if (existsSync(options.dir) && readdirSync(options.dir).some((f) => f !== '.git')) {
    throw new RetectlError('io', `${options.dir} is not empty: retectl init only writes into an empty or new folder`);
  }
  const files = Object.keys(EXAMPLE_RETE).sort();
  for (const file of files) {
    const path = join(options.dir, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, EXAMPLE_RETE[file], { flag: 'wx' });
  }
  if (options.json) return outJson({ dir: options.dir, files });
  out(`wrote an example rete to ${options.dir}: ${files.join(', ')}`);
  out('next: retectl validate, retectl compile, retectl plan, retectl publish');
  out("to point nodes at the mesh's package repository: retectl package key > files/florete.gpg, then uncomment repository.yaml");
}
