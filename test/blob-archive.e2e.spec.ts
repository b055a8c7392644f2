import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { sha256Hex } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client, expectProblem, jsonOrUndefined, type Reply } from './support/http.js';
import { blob, tarOf, type Entry } from './support/tar.js';

jest.setTimeout(120_000);

/**
 * Many blobs in one request: POST /v1/blobs with a tar archive whose entries are named by their
 * sha256. Good archives store every blob, sent with a length or streamed without one; every bad
 * archive is refused with a problem answer, and nothing of it is stored, even the good entries
 * before the bad one.
 */

const ARCHIVE_LIMIT = 256 * 1024;
const BLOB_LIMIT = 64 * 1024;

/** Sends an archive over node:http: with a Content-Length, or chunked (no length) when `chunked`. */
function sendArchive(url: string, token: string | null, body: Buffer, options: { chunked?: boolean; type?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': options.type ?? 'application/x-tar' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (!options.chunked) headers['content-length'] = String(body.length);
    const req = httpRequest(new URL('/v1/blobs', url), { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), text, body: jsonOrUndefined(text) });
      });
    });
    // The coordinator may refuse and stop reading before the whole body is written.
    req.on('error', (err) => ((err as { code?: string }).code === 'EPIPE' || (err as { code?: string }).code === 'ECONNRESET' ? undefined : reject(err)));
    if (options.chunked) {
      // Written in pieces, as a stream would arrive.
      for (let i = 0; i < body.length; i += 4096) req.write(body.subarray(i, i + 4096));
      req.end();
    } else req.end(body);
  });
}

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

describe.each(targets)('blob archives on $database', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let dataDir: string;
  let publisher: Client;
  let reader: Client;

  /** The digests of these entries the coordinator lacks. */
  const missing = async (entries: readonly Entry[]): Promise<string[]> => {
    const r = await publisher.post('/v1/blobs/missing', { digests: entries.map((e) => e.name) });
    expect(r.status).toBe(200);
    return r.body.missing;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-blob-archive-'));
    const databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    coordinator = await startCoordinatorProcess({
      databaseUrl,
      dataDir,
      env: { FLORETE_ARCHIVE_LIMIT: String(ARCHIVE_LIMIT), FLORETE_BLOB_LIMIT: String(BLOB_LIMIT) },
    });
    const admin = new Client(coordinator.url, coordinator.adminToken!);
    const token = async (role: string) => (await admin.post('/v1/api-tokens', { name: `${role}-archive`, role })).body.token as string;
    publisher = admin.as(await token('publisher'));
    reader = admin.as(await token('reader'));
  });

  afterAll(async () => {
    await coordinator?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stores every blob of an archive sent with a length, and again stores nothing new', async () => {
    const entries = [blob('{"a":1}\n'), blob('{"b":2}\n'), blob('')];
    const archive = await tarOf([...entries, entries[0]]);
    const first = await sendArchive(coordinator.url, publisher.token!, archive);
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { received: 3, created: 3, bytes: 16 } });
    expect(await missing(entries)).toEqual([]);
    const again = await sendArchive(coordinator.url, publisher.token!, archive);
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { received: 3, created: 0, bytes: 16 } });
    // The bytes stored are the bytes sent: a node published with them gets them back.
    const published = await publisher.post('/v1/publishes', { message: 'from an archive', nodes: { n1: { artifacts: { 'a.json': entries[0].name } } } });
    expect(published.status).toBe(201);
    const version = await reader.get('/v1/nodes/n1/versions/1');
    expect(version.status).toBe(200);
    expect(JSON.stringify(version.body)).toContain(entries[0].name);
  });

  it('lists heads as digests only, a page at a time, for a plan to compare', async () => {
    const entries = [blob('{"head":"p1"}\n'), blob('{"head":"p2"}\n'), blob('{"head":"p3"}\n')];
    expect((await sendArchive(coordinator.url, publisher.token!, await tarOf(entries))).status).toBe(200);
    const nodes = Object.fromEntries(entries.map((e, i) => [`page-${i + 1}`, { artifacts: { 'a.json': e.name } }]));
    expect((await publisher.post('/v1/publishes', { message: 'heads', nodes })).status).toBe(201);
    const first = await reader.get('/v1/heads?limit=2&cursor=page-0');
    expect(first.status).toBe(200);
    expect(first.body.items.map((h: { node: string }) => h.node)).toEqual(['page-1', 'page-2']);
    expect(first.body.items[0]).toEqual({
      node: 'page-1',
      version: 1,
      set_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      retired: false,
      artifacts: [{ name: 'a.json', sha256: entries[0].name, size: entries[0].content.length }],
    });
    expect(first.body.next_cursor).toBe('page-2');
    const rest = await reader.get(`/v1/heads?limit=2&cursor=${first.body.next_cursor}`);
    // Each page says the ledger position it was read at: nothing was appended between the two.
    const head = (await reader.get('/v1/ledger/head')).body.position;
    expect(rest.body).toEqual({ items: [expect.objectContaining({ node: 'page-3' })], next_cursor: null, position: head });
    expect(first.body.position).toBe(head);
    // Digests only: no artifact content travels.
    expect(first.text + rest.text).not.toContain('content');
    expectProblem(await reader.get('/v1/heads?limit=0'), 422, 'invalid_query');
  });

  it('stores an archive streamed without a length', async () => {
    const entries = Array.from({ length: 40 }, (_, i) => blob(`{"streamed":${i},"pad":"${'x'.repeat(1000 + i)}"}\n`));
    const r = await sendArchive(coordinator.url, publisher.token!, await tarOf(entries), { chunked: true });
    expect({ status: r.status, received: r.body?.received, created: r.body?.created }).toEqual({ status: 200, received: 40, created: 40 });
    expect(await missing(entries)).toEqual([]);
  });

  it('refuses an entry whose content does not hash to its name, storing none of the archive', async () => {
    const good = blob('{"good":"before the bad one"}\n');
    const bad = { name: sha256Hex('claimed'), content: Buffer.from('actual bytes') };
    const after = blob('{"good":"after the bad one"}\n');
    const r = await sendArchive(coordinator.url, publisher.token!, await tarOf([good, bad, after]));
    expectProblem(r, 422, 'digest_mismatch');
    expect(r.body).toEqual(expect.objectContaining({ entry: 2, expected: bad.name, actual: sha256Hex('actual bytes') }));
    expect(await missing([good, bad, after])).toEqual([good.name, bad.name, after.name].sort());
  });

  it('refuses an archive cut short in the middle of an entry, storing nothing', async () => {
    const entries = [blob('{"whole":true}\n'), blob(`{"cut":"${'y'.repeat(3000)}"}\n`)];
    const archive = await tarOf(entries);
    // The first entry (header and one block) is whole; the second is cut inside its content.
    const r = await sendArchive(coordinator.url, publisher.token!, archive.subarray(0, 1024 + 512 + 1000), { chunked: true });
    expectProblem(r, 422, 'invalid_archive');
    expect(r.body.detail).toMatch(/cut short/);
    expect(await missing(entries)).toEqual(entries.map((e) => e.name).sort());
  });

  it('refuses a body that is not tar', async () => {
    const r = await sendArchive(coordinator.url, publisher.token!, Buffer.from('{"this":"is json, not tar"}'.repeat(40)));
    expectProblem(r, 422, 'invalid_archive');
    expect(r.body.detail).toMatch(/not a tar archive/);
  });

  it('refuses an entry that is not named by a digest', async () => {
    const named = { name: 'agent.json', content: Buffer.from('{}\n') };
    const r = await sendArchive(coordinator.url, publisher.token!, await tarOf([named]));
    expectProblem(r, 422, 'invalid_archive');
    expect(r.body.detail).toMatch(/named by the sha256/);
    expect(await missing([blob('{}\n')])).toEqual([sha256Hex('{}\n')]);
  });

  it('refuses an archive over the limit, declared or streamed, and an entry over the blob limit, storing nothing', async () => {
    const entries = Array.from({ length: 6 }, (_, i) => blob(`${i}${'z'.repeat(60 * 1024)}`));
    const archive = await tarOf(entries);
    expect(archive.length).toBeGreaterThan(ARCHIVE_LIMIT);
    expectProblem(await sendArchive(coordinator.url, publisher.token!, archive), 413, 'body_too_large');
    expectProblem(await sendArchive(coordinator.url, publisher.token!, archive, { chunked: true }), 413, 'body_too_large');
    expect(await missing(entries)).toEqual(entries.map((e) => e.name).sort());
    const big = blob('b'.repeat(BLOB_LIMIT + 1));
    const r = await sendArchive(coordinator.url, publisher.token!, await tarOf([big]));
    expectProblem(r, 413, 'body_too_large');
    expect(r.body.entry).toBe(1);
    expect(await missing([big])).toEqual([big.name]);
  });

  it('refuses a reader, a missing token and another media type before reading the body', async () => {
    const entries = [blob('{"who":"may upload"}\n')];
    const archive = await tarOf(entries);
    expectProblem(await sendArchive(coordinator.url, reader.token!, archive), 403, 'forbidden');
    expectProblem(await sendArchive(coordinator.url, null, archive), 401, 'unauthenticated');
    expectProblem(await sendArchive(coordinator.url, publisher.token!, archive, { type: 'application/octet-stream' }), 415, 'unsupported_media_type');
    expect(await missing(entries)).toEqual([entries[0].name]);
  });
});
