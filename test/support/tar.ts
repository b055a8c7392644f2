import { pack } from 'tar-stream';
import { sha256Hex } from '#bundle';

/** One entry of a blob archive: its name (a blob's sha256, or anything a test refuses) and bytes. */
export interface Entry {
  readonly name: string;
  readonly content: Buffer;
}

/** A blob as an archive entry named by its sha256. */
export const blob = (text: string): Entry => {
  const content = Buffer.from(text, 'utf8');
  return { name: sha256Hex(content), content };
};

/** A tar archive as tar-stream writes it (ustar, the end-of-archive blocks included). */
export async function tarOf(entries: readonly Entry[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c) => chunks.push(c as Buffer));
    p.on('end', () => resolve());
    p.on('error', reject);
  });
  for (const e of entries) p.entry({ name: e.name, size: e.content.length }, e.content);
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}
