import { principalText } from './principal.js';

describe('the header line about the token in use', () => {
  it('says its name, role and scope, or that it is held to none', () => {
    expect(principalText({ name: 'ci', role: 'publisher', scope: ['tag:edge', 'web-1'] })).toBe('ci · publisher · only tag:edge, web-1');
    expect(principalText({ name: 'grafana', role: 'reader', scope: null })).toBe('grafana · reader · every node');
    expect(principalText({ name: 'old', role: 'reader' })).toBe('old · reader · every node');
  });
});
