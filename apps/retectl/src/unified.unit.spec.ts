import type { VersionDetail } from '#contracts';
import { nodeDiff } from './commands/plan.js';
import { colourPatch, renderNodeDiff, unifiedPatch, useColour } from './unified.js';

const ESC = '\u001b[';

describe('the unified diff renderer', () => {
  const patch = unifiedPatch('a/v1/flor.json', 'a/tree/flor.json', '{\n  "listen": "1"\n}\n', '{\n  "listen": "2"\n}\n');

  it('writes a unified diff with both labels and the changed line', () => {
    expect(patch).toMatch(/^--- a\/v1\/flor\.json$/m);
    expect(patch).toMatch(/^\+\+\+ a\/tree\/flor\.json$/m);
    expect(patch).toMatch(/^-  "listen": "1"$/m);
    expect(patch).toMatch(/^\+  "listen": "2"$/m);
  });

  it('colours removed lines red, added green, hunks cyan, headers bold, and leaves context alone', () => {
    const lines = colourPatch(patch).split('\n');
    expect(lines).toContain(`${ESC}31m-  "listen": "1"${ESC}0m`);
    expect(lines).toContain(`${ESC}32m+  "listen": "2"${ESC}0m`);
    expect(lines).toContain(`${ESC}1m--- a/v1/flor.json${ESC}0m`);
    expect(lines.some((l) => l.startsWith(`${ESC}36m@@`))).toBe(true);
    expect(lines).toContain(' {');
  });

  it('puts resource changes first, and colours only when asked', () => {
    const d = {
      resources: [{ kind: 'package' as const, action: 'removed' as const, manager: 'apt' as const, name: 'curl', version: '1' }],
      artifacts: [patch],
      files: [],
    };
    expect(renderNodeDiff(d, false)).toEqual(['- package curl', patch]);
    expect(renderNodeDiff(d, true)[0]).toBe(`${ESC}31m- package curl${ESC}0m`);
    expect(renderNodeDiff(d, false).join('\n')).not.toContain(ESC);
  });

  it('colours on a terminal only, never with --no-color or a non-empty NO_COLOR', () => {
    expect(useColour(undefined, { isTTY: true }, {})).toBe(true);
    expect(useColour(undefined, { isTTY: false }, {})).toBe(false);
    expect(useColour(false, { isTTY: true }, {})).toBe(false);
    expect(useColour(undefined, { isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(useColour(undefined, { isTTY: true }, { NO_COLOR: '' })).toBe(true);
  });
});

describe('plan --diff: a head against the compiled tree', () => {
  const head: VersionDetail = {
    node: 'web',
    version: 3,
    set_digest: '0'.repeat(64),
    retired: false,
    artifacts: [
      { name: 'flor.json', sha256: '1'.repeat(64), size: 1, encoding: 'utf-8', content: 'old\n' },
      { name: 'agent.json', sha256: '2'.repeat(64), size: 1, encoding: 'utf-8', content: 'same\n' },
      {
        name: 'resources.json',
        sha256: '3'.repeat(64),
        size: 1,
        encoding: 'utf-8',
        content: JSON.stringify({ files: [{ path: '/etc/motd', content: { sha256: 'a'.repeat(64) } }], packages: [] }),
      },
      { name: `file-${'a'.repeat(64)}`, sha256: 'a'.repeat(64), size: 1, encoding: 'utf-8', content: 'hello\n' },
    ],
  };
  const local = new Map<string, string | Uint8Array>([
    ['flor.json', 'new\n'],
    ['agent.json', 'same\n'],
    ['resources.json', JSON.stringify({ files: [{ path: '/etc/motd', content: { sha256: 'b'.repeat(64) } }], packages: [] })],
    [`file-${'b'.repeat(64)}`, new TextEncoder().encode('hello, world\n')],
  ]);

  it('diffs the changed artifacts by name and a changed file under its host path', () => {
    const d = nodeDiff(
      {
        node: 'web',
        action: 'changed',
        version: 3,
        artifacts: ['flor.json', 'resources.json'],
        resources: [{ kind: 'file', action: 'changed', path: '/etc/motd', changes: [{ field: 'content' }] }],
      },
      head,
      local,
    );
    expect(d.artifacts.map((p) => p.split('\n')[1])).toEqual(['--- web/v3/flor.json', '--- web/v3/resources.json']);
    expect(d.artifacts[0]).toMatch(/^-old\n\+new$/m);
    expect(d.files).toHaveLength(1);
    expect(d.files[0]).toMatch(/^--- web\/v3\/etc\/motd\n\+\+\+ web\/tree\/etc\/motd$/m);
    expect(d.files[0]).toMatch(/^-hello\n\+hello, world$/m);
  });

  it('shows a new node as everything added', () => {
    const d = nodeDiff({ node: 'web', action: 'new', artifacts: ['agent.json'], readded: false }, undefined, new Map([['agent.json', '{}\n']]));
    expect(d.artifacts).toHaveLength(1);
    expect(d.artifacts[0]).toMatch(/^--- web\/v0\/agent\.json\n\+\+\+ web\/tree\/agent\.json$/m);
    expect(d.artifacts[0]).toMatch(/^\+\{\}$/m);
  });
});
