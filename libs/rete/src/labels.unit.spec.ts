import type { ReteFile } from '#contracts';
import { namedTags, nodeLabels } from './labels.js';
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

describe('the tags a rete names', () => {
  it("are those of ACL rules' sources, resources' selectors and the rollout's canary, not those nodes carry", () => {
    const files: ReteFile[] = [
      {
        nodes: [{ name: 'a', kind: 'server', listen: '10.0.0.1:7946', tags: ['carried', 'web'] }],
        groups: [{ name: 'ops', members: ['a'] }],
        acl: [{ from: ['tag:web', 'group:ops', 'a'], to: ['a:web'] }],
      },
      { resources: [{ select: { tags: ['db', 'web'] }, packages: [{ name: 'nginx', version: '1.26' }] }, { select: { groups: ['ops'] } }] },
      { rollout: { canary: { tags: ['staff'] } } },
    ];
    expect([...namedTags(files)].sort()).toEqual(['db', 'staff', 'web']);
    expect(namedTags([])).toEqual(new Set());
  });

  it('come with a validation that has a rete', () => {
    expect(validateRete(sources).namedTags).toEqual(new Set());
    const named = [...sources, { file: 'policy.yaml', text: 'acl:\n  - { from: [tag:db], to: [web-1:web] }\n' }];
    const withService = named.map((s) =>
      'text' in s ? { ...s, text: s.text.replace('tags: [web, edge] }', 'tags: [web, edge], services: [{ name: web, port: 443 }] }') } : s,
    );
    expect(validateRete(withService).namedTags).toEqual(new Set(['db']));
  });
});
