import { dataPath, pathText } from './path-text.js';

describe('data paths as text', () => {
  it('reads back every path pathText writes', () => {
    const paths: PropertyKey[][] = [
      ['nodes', 0, 'services', 12, 'port'],
      ['groups', 3],
      ['mesh'],
      ['defaults', 'sync', 'health_checks', 0, 'name'],
      ['acl', 1, 'to', 0],
      [],
    ];
    for (const path of paths) expect(dataPath(pathText(path))).toEqual(path);
  });

  it('refuses text pathText never writes', () => {
    for (const text of ['.nodes', 'nodes.', 'nodes[x]', 'nodes[0]services', 'nodes..sync', 'nodes[0].', 'nodes[-1]', 'nodes[0] ', 'nodes[01]']) {
      expect([text, dataPath(text)]).toEqual([text, undefined]);
    }
  });
});
