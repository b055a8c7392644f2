import type { ResourcesJson } from '#contracts';
import { artifactsText, diffResources, formatResourceChange } from './resource-changes.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const file = (path: string, sha256 = A, attrs: Partial<{ mode: string; owner: string; group: string }> = {}) => ({
  path,
  mode: '0644',
  owner: 'root',
  group: 'root',
  ...attrs,
  content: { sha256, size: 10 },
});
const apt = (name: string, version: string) => ({ manager: 'apt' as const, name, version });
const lines = (before: ResourcesJson | undefined, after: ResourcesJson | undefined) => diffResources(before, after).map(formatResourceChange);

describe('resource changes', () => {
  const before: ResourcesJson = {
    files: [file('/etc/motd'), file('/etc/issue'), file('/etc/gone')],
    packages: [apt('florete-agent', '0.1.0'), apt('foo', '1.0'), apt('nginx', '1.22.1-9')],
  };

  it('lists added, removed and changed files by path and packages by name and version, files first, each sorted', () => {
    const after: ResourcesJson = {
      files: [file('/etc/apt/sources.list.d/florete.list'), file('/etc/motd', B), file('/etc/issue', A, { mode: '0600', owner: 'www-data' })],
      packages: [apt('nginx', '1.22.1-9'), apt('florete-agent', '0.2.0'), apt('curl', '7.88.1-10')],
    };
    expect(lines(before, after)).toEqual([
      '+ file /etc/apt/sources.list.d/florete.list',
      '- file /etc/gone',
      '~ file /etc/issue (mode 0644 -> 0600, owner root -> www-data)',
      '~ file /etc/motd (content)',
      '+ package curl 7.88.1-10',
      '~ package florete-agent 0.1.0 -> 0.2.0',
      '- package foo',
    ]);
  });

  it('sees no change in a reordering, and everything as added or removed against no resources.json', () => {
    const reordered: ResourcesJson = { files: [...before.files].reverse(), packages: [...before.packages].reverse() };
    expect(lines(before, reordered)).toEqual([]);
    expect(lines(undefined, undefined)).toEqual([]);
    expect(lines(undefined, { files: [file('/etc/motd')], packages: [apt('nginx', '1.0')] })).toEqual(['+ file /etc/motd', '+ package nginx 1.0']);
    expect(lines({ files: [file('/etc/motd')], packages: [apt('nginx', '1.0')] }, undefined)).toEqual(['- file /etc/motd', '- package nginx']);
  });

  it('keeps the details for machines: which attribute, from and to', () => {
    expect(diffResources({ files: [file('/x')], packages: [] }, { files: [file('/x', B, { group: 'adm' })], packages: [] })).toEqual([
      { kind: 'file', action: 'changed', path: '/x', changes: [{ field: 'content' }, { field: 'group', from: 'root', to: 'adm' }] },
    ]);
  });

  it('names artifacts for a human, counting file contents instead of listing digests', () => {
    expect(artifactsText(['agent.json', `file-${A}`, 'flor.json', 'resources.json', `file-${B}`])).toBe(
      'agent.json, flor.json, resources.json, 2 file contents',
    );
    expect(artifactsText([`file-${A}`, 'resources.json'])).toBe('resources.json, 1 file content');
    expect(artifactsText(['agent.json', 'flor.json'])).toBe('agent.json, flor.json');
  });
});
