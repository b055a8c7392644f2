import { createHash } from 'node:crypto';
import type { ReteFile } from '#contracts';
import { formatDiagnostic } from './diagnostics.js';
import { parseFile, type ParseCache } from './parse-file.js';

/** A cache in memory that counts what it was asked and given. */
function memoryCache() {
  const entries = new Map<string, ReteFile>();
  const cache = {
    gets: 0,
    sets: 0,
    get(digest: string) {
      cache.gets++;
      return entries.get(digest);
    },
    set(digest: string, data: ReteFile) {
      cache.sets++;
      entries.set(digest, data);
    },
  };
  return cache satisfies ParseCache;
}

describe('parseFile', () => {
  it('refuses a file that is not UTF-8, naming the byte offset and the place of the first bad byte', () => {
    const bytes = Uint8Array.from([...new TextEncoder().encode('nodes:\n  - name: caf'), 0xe9, ...new TextEncoder().encode('\n')]);
    const { parsed, diagnostics } = parseFile({ file: 'nodes.yaml', bytes });
    expect(parsed).toBeUndefined();
    expect(diagnostics.map(formatDiagnostic)).toEqual(['nodes.yaml:2:14: not valid UTF-8: byte 0xe9 at offset 20 [not_utf8]']);
  });

  it('reads a UTF-8 file given as bytes as it reads the same text', () => {
    const text = 'mesh:\n  name: lab\n  coordinator: https://c.example\nacl:\n  - description: café ☕\n    from: [a]\n    to: [a:b]\n';
    const fromBytes = parseFile({ file: 'r.yaml', bytes: new TextEncoder().encode(text) });
    const fromText = parseFile({ file: 'r.yaml', text });
    expect(fromBytes.diagnostics).toEqual([]);
    expect(fromBytes.parsed?.data).toEqual(fromText.parsed?.data);
  });

  describe('a huge value in a message', () => {
    const huge = 'a'.repeat(5 * 1024 * 1024);
    const quoted = `"${'a'.repeat(80)}…" (5242880 characters)`;
    const messages = (text: string) => parseFile({ file: 'r.yaml', text }).diagnostics.map((d) => d.message);

    it('is cut to 80 characters, with the full length', () => {
      expect(messages(`mesh:\n  name: ${huge}\n  coordinator: https://c.example\n`)).toEqual([
        `must be a DNS label: 1-63 lowercase letters, digits or "-", not starting or ending with "-" (got ${quoted})`,
      ]);
      expect(messages(`nodes:\n  - name: a\n    kind: ${huge}\n    listen: 10.0.0.1:1\n`)).toEqual([
        `must be one of "server", "device", not the string ${quoted}`,
      ]);
      // YAML itself refuses an implicit key over 1024 characters.
      expect(messages(`${'k'.repeat(1000)}: 1\n`)).toEqual([`unknown key "${'k'.repeat(80)}…" (1000 characters)`]);
    });

    it('is quoted whole when it is short', () => {
      expect(messages('nodes:\n  - name: a\n    kind: phone\n    listen: 10.0.0.1:1\n')).toEqual(['must be one of "server", "device", not the string "phone"']);
    });

    it('is not cut inside a character', () => {
      const [message] = messages(`nodes:\n  - name: a\n    kind: ${'a'.repeat(79)}${'😀'.repeat(10)}\n    listen: 10.0.0.1:1\n`);
      expect(message).toBe(`must be one of "server", "device", not the string "${'a'.repeat(79)}…" (89 characters)`);
    });
  });

  it('says in its own words that a file holds one YAML document, where the second begins', () => {
    const { parsed, diagnostics } = parseFile({ file: 'r.yaml', text: 'nodes: []\n---\nacl: []\n---\ngroups: []\n' });
    expect(parsed).toBeUndefined();
    expect(diagnostics.map(formatDiagnostic)).toEqual(['r.yaml:2:1: a rete file holds one YAML document; found 3 (separated by ---) [yaml_syntax]']);
  });

  describe('a package version written without quotes', () => {
    const versions = (text: string) => {
      const { parsed, diagnostics } = parseFile({ file: 'r.yaml', text });
      expect(diagnostics.map(formatDiagnostic)).toEqual([]);
      return parsed!.data.resources!.flatMap((r) => r.packages ?? []).map((p) => p.version);
    };
    const rete = (...written: string[]) =>
      `resources:\n  - select: { tags: [web] }\n    packages:\n${written.map((v, i) => `      - { name: p${i}, version: ${v} }\n`).join('')}`;

    it('is the text as written, not the number YAML would read in it', () => {
      // As numbers these are 1, 1.1, 2, 7 and 1000: a different version, or one apt would not find.
      expect(versions(rete('1.0', '1.10', '2', '007', '1e3'))).toEqual(['1.0', '1.10', '2', '007', '1e3']);
    });

    it('is the text as written under a key spelled with an escape', () => {
      expect(versions('resources:\n  - select: { tags: [web] }\n    "p\\x61ckages":\n      - { name: nginx, version: 1.20 }\n')).toEqual(['1.20']);
    });

    it('is the same in block style, quoted or not', () => {
      const text =
        'resources:\n  - select: { tags: [web] }\n    packages:\n      - name: nginx\n        version: 1.20\n      - name: curl\n        version: "1.20"\n';
      expect(versions(text)).toEqual(['1.20', '1.20']);
    });

    it('is still checked as a Debian version, where it was written', () => {
      const { diagnostics } = parseFile({ file: 'r.yaml', text: rete('1.0', '.inf') });
      expect(diagnostics.map(formatDiagnostic)).toEqual([
        expect.stringMatching(/^r\.yaml:5:30: resources\[0\]\.packages\[1\]\.version: must be an exact Debian version.*\(got "\.inf"\) \[bad_version\]$/),
      ]);
    });

    it('leaves numbers elsewhere alone', () => {
      const { diagnostics } = parseFile({
        file: 'r.yaml',
        text: 'mesh:\n  name: lab\n  coordinator: https://c.example\nnodes:\n  - name: 1.0\n    kind: server\n    listen: 10.0.0.1:1\n',
      });
      expect(diagnostics.map((d) => d.message)).toEqual([expect.stringMatching(/, not the fraction 1$|, not the number 1$/)]);
    });
  });

  it('gives the same data and places for plain YAML as for YAML only the yaml package reads', () => {
    const plainText = 'nodes:\n  - name: alpha\n    kind: server\n    listen: 10.0.0.1:7946 # edge\n    services:\n      - { name: web, port: 443 }\n';
    // The same file with an anchor and its alias, which the plain reader leaves to the package.
    const aliased =
      plainText.replace('name: web', 'name: &svc web') +
      '  - name: beta\n    kind: server\n    listen: 10.0.0.2:7946\n    services:\n      - { name: *svc, port: 80 }\n';
    const plain = parseFile({ file: 'n.yaml', text: plainText });
    const other = parseFile({ file: 'n.yaml', text: aliased });
    expect(plain.diagnostics).toEqual([]);
    expect(other.diagnostics).toEqual([]);
    expect(other.parsed!.data.nodes![0]).toEqual(plain.parsed!.data.nodes![0]);
    expect(other.parsed!.data.nodes![1].services).toEqual([{ name: 'web', port: 80 }]);
    // The anchor moves what follows it on its line.
    for (const [file, portCol] of [
      [plain, 28],
      [other, 33],
    ] as const) {
      expect({ ...file.parsed!.placeOf(['nodes', 0, 'listen']) }).toEqual({ file: 'n.yaml', line: 4, col: 13 });
      expect({ ...file.parsed!.placeOf(['nodes', 0, 'services', 0, 'port']) }).toEqual({ file: 'n.yaml', line: 6, col: portCol });
    }
  });

  it('reports a plain file that breaks the schema at the place of each problem', () => {
    const { parsed, diagnostics } = parseFile({
      file: 'n.yaml',
      text: 'nodes:\n  - name: alpha\n    kind: server\n    listen: 10.0.0.1:7946\n    colour: red\n',
    });
    expect(parsed).toBeUndefined();
    expect(diagnostics.map(formatDiagnostic)).toEqual([expect.stringMatching(/^n\.yaml:5:5: nodes\[0\]\.colour: unknown key "colour" \[unknown_key\]$/)]);
  });

  describe('with a cache', () => {
    const text = 'nodes:\n  - name: alpha\n    kind: server\n    listen: 10.0.0.1:7946\n    services:\n      - { name: web, port: 443 }\n';

    it('keeps the data of a file that parses and gives it back for the same bytes, with the same places', () => {
      const cache = memoryCache();
      const first = parseFile({ file: 'n.yaml', text }, cache);
      const again = parseFile({ file: 'n.yaml', bytes: new TextEncoder().encode(text) }, cache);
      expect([cache.gets, cache.sets]).toEqual([2, 1]);
      expect(again.parsed?.data).toBe(first.parsed?.data);
      const plain = parseFile({ file: 'n.yaml', text }).parsed!;
      for (const path of [
        ['nodes', 0],
        ['nodes', 0, 'services', 0, 'port'],
        ['nodes', 0, 'nope'],
      ]) {
        expect({ ...again.parsed!.placeOf(path) }).toEqual(plain.placeOf(path));
        expect({ ...first.parsed!.placeOf(path) }).toEqual(plain.placeOf(path));
      }
    });

    it('takes a file whose digest its reader knows from the cache without its bytes, reading them only for a place', () => {
      const cache = memoryCache();
      const bytes = new TextEncoder().encode(text);
      const first = parseFile({ file: 'n.yaml', bytes }, cache);
      let reads = 0;
      const known = {
        file: 'n.yaml',
        digest: createHash('sha256').update(bytes).digest('hex'),
        get bytes() {
          reads++;
          return bytes;
        },
      };
      const again = parseFile(known, cache);
      expect(again.parsed?.data).toBe(first.parsed?.data);
      expect(reads).toBe(0);
      expect({ ...again.parsed!.placeOf(['nodes', 0, 'services', 0, 'port']) }).toEqual({ ...first.parsed!.placeOf(['nodes', 0, 'services', 0, 'port']) });
      expect(reads).toBeGreaterThan(0);
      // A digest the cache does not hold: parsed from the bytes.
      const other = parseFile({ ...known, digest: 'f'.repeat(64), bytes }, cache);
      expect(other.parsed?.data).toEqual(first.parsed?.data);
      expect(cache.sets).toBe(2);
    });

    it('parses a file again once its bytes change', () => {
      const cache = memoryCache();
      parseFile({ file: 'n.yaml', text }, cache);
      const changed = parseFile({ file: 'n.yaml', text: text.replace('443', '8443') }, cache);
      expect(cache.sets).toBe(2);
      expect(changed.parsed?.data.nodes?.[0].services?.[0].port).toBe(8443);
    });

    it('keeps nothing of a file that does not parse, and reports it as without one', () => {
      const cache = memoryCache();
      const broken = text.replace('kind: server', 'kind: toaster');
      const withCache = parseFile({ file: 'n.yaml', text: broken }, cache);
      expect(cache.sets).toBe(0);
      expect(withCache).toEqual(parseFile({ file: 'n.yaml', text: broken }));
    });
  });
});
