import { formatDiagnostic } from './diagnostics.js';
import { parseFile } from './parse-file.js';

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
});
