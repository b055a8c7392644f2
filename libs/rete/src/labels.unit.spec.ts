import { nodeLabels } from './labels.js';
import type { Source } from './parse-file.js';
import { validateRete } from './validate.js';

const sources: Source[] = [
  {
    file: 'mesh.yaml',
    text: `mesh:
  name: m
  coordinator: https://coordinator.example.net
  safety_net: provider console
nodes:
  - { name: web-1, kind: server, listen: "10.0.0.1:51820", tags: [web, edge] }
  - { name: db-1, kind: server, listen: "10.0.0.2:51820", tags: [db] }
  - { name: lab-1, kind: device, listen: "10.0.0.3:51820" }
groups:
  - { name: ops, members: [web-1, db-1] }
  - { name: data, members: [db-1] }
`,
  },
];

describe('node labels of a rete', () => {
  it('are each node’s tags and the groups it is a member of, sorted; none for a node with neither', () => {
    const { rete, diagnostics } = validateRete(sources);
    if (!rete) throw new Error(JSON.stringify(diagnostics));
    expect(Object.fromEntries(nodeLabels(rete))).toEqual({
      'web-1': { tags: ['edge', 'web'], groups: ['ops'] },
      'db-1': { tags: ['db'], groups: ['data', 'ops'] },
      'lab-1': { tags: [], groups: [] },
    });
  });
});
