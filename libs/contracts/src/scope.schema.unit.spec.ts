import { ApiTokenRequest } from './api.schema.js';
import { scopeSelects, sameLabels, TokenScope } from './scope.schema.js';

const web1 = { tags: ['edge', 'web'], groups: ['ops'] };

describe('a token scope', () => {
  it('selects a node by its name, one of its tags or one of its groups', () => {
    expect(scopeSelects(['web-1'], 'web-1', web1)).toBe(true);
    expect(scopeSelects(['tag:web'], 'web-1', web1)).toBe(true);
    expect(scopeSelects(['group:ops'], 'web-1', web1)).toBe(true);
    expect(scopeSelects(['db-1', 'tag:db', 'group:data'], 'web-1', web1)).toBe(false);
  });

  it('does not read a tag as a group, nor a label as a node name', () => {
    expect(scopeSelects(['group:edge'], 'web-1', web1)).toBe(false);
    expect(scopeSelects(['tag:ops'], 'web-1', web1)).toBe(false);
    expect(scopeSelects(['edge'], 'web-1', web1)).toBe(false);
    expect(scopeSelects(['tag:web-1'], 'web-1', { tags: [], groups: [] })).toBe(false);
  });

  it('is written as the rete writes ACL sources, and node:<name> is kept as the bare name', () => {
    expect(TokenScope.parse(['web-1', 'node:db-1', 'tag:edge', 'group:ops'])).toEqual(['web-1', 'db-1', 'tag:edge', 'group:ops']);
    for (const bad of ['label:x', 'tag:', 'tag:Edge', 'group:a:b', '']) expect(TokenScope.safeParse([bad]).success).toBe(false);
    expect(TokenScope.safeParse([]).success).toBe(false);
  });

  it('is refused for an admin token', () => {
    expect(ApiTokenRequest.safeParse({ name: 'ci', role: 'publisher', scope: ['tag:edge'] }).success).toBe(true);
    const admin = ApiTokenRequest.safeParse({ name: 'root', role: 'admin', scope: ['tag:edge'] });
    expect(admin.success).toBe(false);
    expect(admin.error?.issues[0].path).toEqual(['scope']);
  });
});

describe('node labels', () => {
  it('are the same in any order, and differ by a tag moved to the groups', () => {
    expect(sameLabels({ tags: ['a', 'b'], groups: [] }, { tags: ['b', 'a'], groups: [] })).toBe(true);
    expect(sameLabels({ tags: ['a'], groups: [] }, { tags: [], groups: ['a'] })).toBe(false);
    expect(sameLabels({ tags: ['a'], groups: [] }, { tags: ['a', 'b'], groups: [] })).toBe(false);
  });
});
