/**
 * The primitives behind choices written in the code, each timed against the alternative it was
 * chosen over, in one process, in turns: one-shot sha256 against createHash for the small inputs
 * digests are taken of (libs/bundle/src/digest.ts); Ed25519 signing with node:crypto against jose's
 * WebCrypto path (libs/bundle/src/jws.ts, decision 0001); a small git object stored in its zlib
 * stream against deflated (mirror/repo/loose-objects.ts); a 10,000-entry root tree deflated with
 * Huffman coding only against level 1; the heads a one-node publish to 100,000 nodes keeps, layered over
 * the last ones against copied (ledger/store/heads-memo.ts); each node's head bucket kept against hashed
 * again (retectl's readDelta); a tar archive of 20,000 blobs written by retectl's own ustar writer against
 * tar-stream's (apps/retectl/src/blob-tar.ts), and read by the coordinator's own reader against tar-stream's
 * extract (apps/coordinator/src/bundles/tar-reader.ts); a stamp's data written as canonical JSON in canonical
 * order against walked; a rete's site file of 1,000 nodes read by the plain YAML reader against the yaml
 * package's document (libs/rete/src/plain-yaml.ts); and a chunk of 10,000 stamps' chain hashes and ledger rows as the append
 * writes them against its way before (ledger/store/append.ts). Prints the time of each side and their ratio; nothing here
 * touches a database or the network.
 *
 *   npm run bench:primitives [-- --rounds 5]
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { constants as zlibConstants, deflateSync } from 'node:zlib';
import * as jose from 'jose';
import { extract, pack } from 'tar-stream';
import { Readable } from 'node:stream';
import { bucketOf, canonicalJson, chainHashBytes, chainHashOf, chainedText, chainedTextOf, sha256Hex, signBundle } from '#bundle';
import type { NodeHead } from '../apps/coordinator/src/ledger/domain/ledger.decider.js';
import { advanceHeads } from '../apps/coordinator/src/ledger/store/heads-memo.js';
import { blobArchive } from '../apps/retectl/src/blob-tar.js';
import { readBlobArchive } from '../apps/coordinator/src/bundles/blob-archive.js';
import { storedZlib } from '../apps/coordinator/src/mirror/repo/loose-objects.js';
import { LineCounter, parseDocument } from 'yaml';
import { ReteFile } from '#contracts';
import { parseFile } from '#rete';
import { fleetRete } from '../libs/rete/src/testing/fleet-rete.js';
import { runBench, UsageError } from './support/cleanup.js';
import { parseCli } from './support/cli.js';
import { fmt, formatTable, median } from './support/table.js';

const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** Microseconds per call of `fn` over `n` calls, after a warm-up; a promise is awaited, a plain call is not. */
async function perCall(fn: (i: number) => unknown, n: number): Promise<number> {
  const awaited = fn(0) instanceof Promise;
  const loop = async (count: number) => {
    if (awaited) for (let i = 0; i < count; i++) await fn(i);
    else for (let i = 0; i < count; i++) fn(i);
  };
  await loop(Math.min(n, 1000));
  const start = process.hrtime.bigint();
  await loop(n);
  return Number(process.hrtime.bigint() - start) / n / 1000;
}

interface Pair {
  readonly what: string;
  readonly chosen: string;
  readonly other: string;
  readonly n: number;
  readonly chosenFn: (i: number) => unknown;
  readonly otherFn: (i: number) => unknown;
}

async function pairs(): Promise<Pair[]> {
  const small = Array.from({ length: 1000 }, () => randomBytes(100).toString('hex'));
  const { privateKey } = generateKeyPairSync('ed25519');
  const payload = new Uint8Array(randomBytes(1500));
  const webCryptoKey = await jose.importJWK({ ...privateKey.export({ format: 'jwk' }), alg: 'EdDSA' }, 'EdDSA');
  const objects = Array.from({ length: 1000 }, () => Buffer.from(randomBytes(50).toString('hex')));
  const tree = Buffer.concat(
    Array.from({ length: 10_000 }, (_, i) => Buffer.concat([Buffer.from(`40000 node-${String(i).padStart(5, '0')}\0`), randomBytes(20)])),
  );
  const site = [...fleetRete(2000).values()][1];
  const fleet = Array.from({ length: 100_000 }, (_, i) => `node-${String(i).padStart(6, '0')}`);
  const heads = new Map<string, NodeHead>(fleet.map((node) => [node, { version: 1, setDigest: sha256Hex(node), retired: false }]));
  const stampOf = (i: number) => ({ node: fleet[(i * 7919) % fleet.length], version: 2, set_digest: 'x', retired: false, artifacts: [], publish_id: 'p' });
  const buckets = new Map(fleet.map((node) => [node, bucketOf(node)]));
  const blobs = new Map(
    Array.from({ length: 20_000 }, (_, i) => {
      const content = Buffer.from(JSON.stringify({ node: `node-${i}`, listen: `10.0.${i >> 8}.${i & 255}:4433`, pad: 'x'.repeat(i % 400) }, null, 2));
      return [sha256Hex(content), content] as const;
    }),
  );
  const drain = async (stream: AsyncIterable<unknown>) => {
    let n = 0;
    for await (const chunk of stream) n += (chunk as Buffer).length;
    return n;
  };
  // retectl's archive before blobArchive: tar-stream's pack, the next entry written once the last was taken.
  const tarStream = (digests: readonly string[]) => {
    const tar = pack();
    void (async () => {
      for (const sha of digests) {
        const content = blobs.get(sha)!;
        await new Promise<void>((resolve, reject) =>
          tar.entry({ name: sha, size: content.byteLength, mode: 0o644, mtime: new Date(0) }, content, (err) => (err ? reject(err) : resolve())),
        );
      }
      tar.finalize();
    })();
    return Readable.from(tar as AsyncIterable<Buffer>);
  };
  const digests = [...blobs.keys()];
  // The same archive as it arrives over HTTP, in 64 KiB chunks, for the coordinator to read.
  const written: Buffer[] = [];
  for await (const chunk of blobArchive(digests, blobs, () => {})) written.push(chunk as Buffer);
  const archive = Buffer.concat(written);
  const arriving = () => {
    const pieces: Buffer[] = [];
    for (let at = 0; at < archive.length; at += 65_536) pieces.push(archive.subarray(at, at + 65_536));
    return Readable.from(pieces, { objectMode: false });
  };
  const limits = { archiveBytes: archive.length, blobBytes: 1 << 20 };
  // The coordinator's reader before tar-reader.ts: tar-stream's extract, each entry and its chunks taken
  // by async iteration, its digest checked.
  const readByTarStream = async (body: Readable) => {
    const tar = extract();
    body.pipe(tar as never);
    const read = new Map<string, Buffer>();
    for await (const entry of tar) {
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        hash.update(chunk);
        chunks.push(chunk);
      }
      if (hash.digest('hex') !== entry.header.name) throw new Error(`${entry.header.name} does not hash to its name`);
      read.set(entry.header.name, Buffer.concat(chunks));
    }
    return read.size;
  };
  if ((await readBlobArchive(arriving(), limits, () => {})).length !== blobs.size || (await readByTarStream(arriving())) !== blobs.size)
    throw new Error('the two readers read different archives');
  // A chunk of a 10,000-node publish's stamps as the ledger's append takes them: the data in canonical
  // order (as the decider writes it now) and in the order it was written before.
  const recorded_at = new Date(0).toISOString();
  const stamps = fleet.slice(0, 10_000).map((node, i) => {
    const artifacts = [{ name: 'flor.json', sha256: sha256Hex(`a${i}`), size: 400 + (i % 300) }];
    return {
      stream: `node:${node}`,
      revision: 2,
      type: 'node_set_stamped',
      ordered: { artifacts, node, publish_id: 'f0e6c2a4-1b7d-4c55-9a3e-2d8b6f1e9c07', retired: false, set_digest: sha256Hex(node), version: 2 },
      inserted: { node, version: 2, set_digest: sha256Hex(node), retired: false, artifacts, publish_id: 'f0e6c2a4-1b7d-4c55-9a3e-2d8b6f1e9c07' },
    };
  });
  const genesis = '0'.repeat(64);
  // The append before (ledger/store/append.ts): each event's whole chained text from its fields, the
  // hash from hex, and the row cut back out of that text.
  const appendBefore = () => {
    const rows: string[] = [];
    const hashes: Buffer[] = [];
    const kept: object[] = [];
    let prev = genesis;
    stamps.forEach((e, i) => {
      const fields = {
        position: i + 1,
        stream: e.stream,
        revision: e.revision,
        type: e.type,
        data: e.inserted,
        meta: { actor: 'ops', kid: 'k1' },
        recorded_at,
      };
      const text = chainedText(fields);
      const hash = chainHashOf(prev, text);
      const meta = canonicalJson(fields.meta);
      const rest = `,"meta":${meta},"position":${fields.position},"recorded_at":${JSON.stringify(recorded_at)},"revision":${fields.revision},"stream":${JSON.stringify(fields.stream)},"type":${JSON.stringify(fields.type)}}`;
      if (!text.endsWith(rest)) throw new Error('not chained as cut');
      rows.push(
        `{"d":${text.slice(8, text.length - rest.length)},"m":${meta},"r":${e.revision},"s":${JSON.stringify(e.stream)},"t":${JSON.stringify(e.type)}}`,
      );
      hashes.push(Buffer.from(hash, 'hex'));
      kept.push({ ...fields, prev_hash: prev, hash });
      prev = hash;
    });
    return [rows.join(','), Buffer.concat(hashes), kept];
  };
  // The append now: the data's text written once (canonical order: the runtime's serialiser), one
  // meta's text for all, hashes as bytes into one buffer.
  const meta = { actor: 'ops', kid: 'k1' };
  const appendNow = () => {
    const rows: string[] = [];
    const hashes = Buffer.allocUnsafe((stamps.length + 1) * 32);
    const kept: object[] = [];
    const metaText = canonicalJson(meta);
    let prev: Uint8Array = Buffer.from(genesis, 'hex');
    let prevHex = genesis;
    stamps.forEach((e, i) => {
      const data = canonicalJson(e.ordered);
      const bytes = chainHashBytes(prev, chainedTextOf(data, metaText, { position: i + 1, stream: e.stream, revision: e.revision, type: e.type, recorded_at }));
      hashes.set(bytes, (i + 1) * 32);
      rows.push(`{"d":${data},"m":${metaText},"r":${e.revision},"s":${JSON.stringify(e.stream)},"t":${JSON.stringify(e.type)}}`);
      const hash = bytes.toString('hex');
      kept.push({ position: i + 1, stream: e.stream, revision: e.revision, type: e.type, data: e.ordered, meta, recorded_at, prev_hash: prevHex, hash });
      prev = bytes;
      prevHex = hash;
    });
    return [rows.join(','), hashes, kept];
  };
  const [now, before] = [appendNow(), appendBefore()];
  if (now[0] !== before[0] || (now[1] as Buffer).subarray(32).toString('hex') !== (before[1] as Buffer).toString('hex'))
    throw new Error('the two appends write different rows or hashes');
  return [
    {
      what: "a stamp's data as canonical JSON",
      chosen: 'canonical order',
      other: 'walked',
      n: 100_000,
      chosenFn: (i) => canonicalJson(stamps[i % stamps.length].ordered),
      otherFn: (i) => canonicalJson(stamps[i % stamps.length].inserted),
    },
    {
      what: "10,000 stamps' chain hashes and rows (ledger append)",
      chosen: 'data written once',
      other: 'cut from the chain text',
      n: 10,
      chosenFn: appendNow,
      otherFn: appendBefore,
    },
    {
      what: `a site file of 1,000 nodes, ${fmt(site.length / 1024)} KiB, parsed and checked (rete)`,
      chosen: 'plain reader',
      other: 'yaml document',
      n: 20,
      chosenFn: () => parseFile({ file: 'site.yaml', text: site }),
      // parseFile before the plain reader: the package's document, its value, the schema.
      otherFn: () =>
        ReteFile.safeParse(parseDocument(site, { lineCounter: new LineCounter(), prettyErrors: false, strict: true }).toJS({ maxAliasCount: 100 })),
    },
    {
      what: 'tar archive of 20,000 blobs (retectl publish)',
      chosen: 'ustar writer',
      other: 'tar-stream',
      n: 5,
      chosenFn: () => drain(blobArchive(digests, blobs, () => {})),
      otherFn: () => drain(tarStream(digests)),
    },
    {
      what: 'tar archive of 20,000 blobs read (coordinator)',
      chosen: 'own reader',
      other: 'tar-stream',
      n: 5,
      chosenFn: () => readBlobArchive(arriving(), limits, () => {}),
      otherFn: () => readByTarStream(arriving()),
    },
    {
      what: 'heads kept after a one-node publish, 100,000 heads',
      chosen: 'layered',
      other: 'copied',
      n: 50,
      chosenFn: (i) => advanceHeads(heads, [stampOf(i)], { position: i, hash: '' }),
      // advanceHeads before the layer: every head copied, then the stamp set.
      otherFn: (i) => {
        const copy = new Map<string, NodeHead>(heads);
        const s = stampOf(i);
        copy.set(s.node, { version: s.version, setDigest: s.set_digest, retired: s.retired, artifacts: s.artifacts });
        return copy;
      },
    },
    {
      what: "each node's bucket, 100,000 nodes (readDelta)",
      chosen: 'kept',
      other: 'md5 again',
      n: 10,
      chosenFn: () => {
        let sum = 0;
        for (const node of fleet) sum += buckets.get(node)!;
        return sum;
      },
      otherFn: () => {
        let sum = 0;
        for (const node of fleet) sum += bucketOf(node);
        return sum;
      },
    },
    {
      what: 'sha256 of 200 bytes',
      chosen: 'hash()',
      other: 'createHash',
      n: 200_000,
      chosenFn: (i) => sha256Hex(small[i % 1000]),
      otherFn: (i) =>
        createHash('sha256')
          .update(small[i % 1000])
          .digest('hex'),
    },
    {
      what: 'Ed25519 JWS of a 1.5 KB payload',
      chosen: 'node:crypto',
      other: 'jose (WebCrypto)',
      n: 5000,
      chosenFn: () => signBundle(payload, { kid: 'k', privateKey }),
      otherFn: () => new jose.CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid: 'k', typ: 'florete-bundle+jws' }).sign(webCryptoKey),
    },
    {
      what: 'zlib stream of a 100-byte object',
      chosen: 'stored',
      other: 'deflate level 1',
      n: 50_000,
      chosenFn: (i) => storedZlib(objects[i % 1000]),
      otherFn: (i) => deflateSync(objects[i % 1000], { level: 1 }),
    },
    {
      what: `deflate of a ${fmt(tree.length / 1024)} KiB root tree`,
      chosen: 'Huffman only',
      other: 'level 1',
      n: 30,
      chosenFn: () => deflateSync(tree, { level: 1, strategy: zlibConstants.Z_HUFFMAN_ONLY }),
      otherFn: () => deflateSync(tree, { level: 1 }),
    },
  ];
}

const us = (n: number): string => (n >= 1000 ? `${fmt(n / 1000, 2)} ms` : `${fmt(n, n >= 10 ? 1 : 2)} µs`);

runBench('primitives', async () => {
  const { values } = parseCli({ rounds: { type: 'string', default: '5' } });
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new UsageError('--rounds must be a whole number ≥ 1');
  const rows: string[][] = [];
  for (const p of await pairs()) {
    say(`${p.what}: ${rounds} rounds`);
    const chosen: number[] = [];
    const other: number[] = [];
    for (let r = 0; r < rounds; r++) {
      chosen.push(await perCall(p.chosenFn, p.n));
      other.push(await perCall(p.otherFn, p.n));
    }
    const [c, o] = [median(chosen), median(other)];
    rows.push([p.what, `${p.chosen} ${us(c)}`, `${p.other} ${us(o)}`, `${fmt(o / c, 2)}×`]);
  }
  console.log(formatTable(['per call (median of rounds)', 'chosen', 'alternative', 'alternative / chosen'], rows));
});
