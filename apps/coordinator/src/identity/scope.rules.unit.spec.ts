import { outOfScope, relabelled, type ScopeFacts } from './scope.rules.js';

const edge = { tags: ['edge'], groups: [] };
const db = { tags: ['db'], groups: ['data'] };
const facts = (f: Partial<ScopeFacts>): ScopeFacts => ({ changed: new Set(), recorded: new Map(), sent: new Map(), known: new Set(), ...f });

describe('the scope rule', () => {
  it('passes nodes selected by their recorded labels, and names the others, sorted', () => {
    const recorded = new Map([
      ['web-1', edge],
      ['db-1', db],
      ['db-0', db],
    ]);
    expect(outOfScope(['tag:edge'], facts({ changed: new Set(['web-1', 'db-1', 'db-0']), recorded }))).toEqual(['db-0', 'db-1']);
    expect(outOfScope(['tag:edge', 'group:data'], facts({ changed: new Set(['web-1', 'db-1']), recorded }))).toEqual([]);
  });

  it('judges a known node by its recorded labels, not by those the request sends', () => {
    const f = facts({ changed: new Set(['db-1']), recorded: new Map([['db-1', db]]), sent: new Map([['db-1', edge]]) });
    expect(outOfScope(['tag:edge'], f)).toEqual(['db-1']);
  });

  it('judges a node new to the ledger by the labels it comes with, and a known unlabelled one by its name', () => {
    expect(outOfScope(['tag:edge'], facts({ changed: new Set(['new-1']), sent: new Map([['new-1', edge]]) }))).toEqual([]);
    expect(outOfScope(['tag:edge'], facts({ changed: new Set(['old-1']), sent: new Map([['old-1', edge]]), known: new Set(['old-1']) }))).toEqual(['old-1']);
    expect(outOfScope(['old-1'], facts({ changed: new Set(['old-1']), known: new Set(['old-1']) }))).toEqual([]);
  });

  it('counts a relabelled node as touched though its set is unchanged, and needs it in scope by both labels', () => {
    const recorded = new Map([['db-1', db]]);
    expect(relabelled({ recorded, sent: new Map([['db-1', { tags: ['db'], groups: ['data'] }]]) })).toEqual([]);
    expect(outOfScope(['tag:edge'], facts({ recorded, sent: new Map([['db-1', { tags: ['db', 'edge'], groups: ['data'] }]]) }))).toEqual(['db-1']);
    expect(outOfScope(['tag:db'], facts({ recorded, sent: new Map([['db-1', { tags: [], groups: ['data'] }]]) }))).toEqual(['db-1']);
    expect(outOfScope(['group:data'], facts({ recorded, sent: new Map([['db-1', { tags: [], groups: ['data'] }]]) }))).toEqual([]);
  });
});
