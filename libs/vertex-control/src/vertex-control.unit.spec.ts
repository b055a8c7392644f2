import type { FlorJson } from '#contracts';
import { VertexControl } from './vertex-control.js';

const base: FlorJson = {
  node: 'alpha',
  mesh: 'prod',
  listen: '127.0.0.1:7000',
  services: [{ name: 'web', port: 8080, protocol: 'tcp' }],
  acl: {
    ingress: { web: ['beta', 'gamma'] },
    egress: [],
    peers: [
      { node: 'beta', listen: '127.0.0.2:7000' },
      { node: 'gamma', listen: '127.0.0.3:7000' },
    ],
  },
};
const line = (v: unknown): string => JSON.stringify(v);

describe('VertexControl.handleLine', () => {
  it('swaps the table new connections read, in place of the old one', () => {
    const control = new VertexControl({ config: base, version: 1 });
    const before = control.acl;
    const answer = control.handleLine(line({ op: 'apply', version: 2, config: { ...base, acl: { ...base.acl, ingress: { web: ['beta'] } } } }));
    expect(answer).toMatchObject({ result: 'swapped', version: 2 });
    expect(control.acl).not.toBe(before);
    expect(control.acl.allowsIngress('web', 'gamma')).toBe(false);
    expect(before.allowsIngress('web', 'gamma')).toBe(true);
  });

  it('reports its version, pid, config digest and swap count', () => {
    const control = new VertexControl({ config: base, version: 7 });
    expect(control.handleLine(line({ op: 'status' }))).toEqual({
      result: 'status',
      version: 7,
      pid: process.pid,
      node: 'alpha',
      mesh: 'prod',
      config_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      acl: base.acl,
      swaps: 0,
    });
  });

  it.each([
    ['not json', 'bad_json'],
    [line({ op: 'reboot' }), 'bad_request'],
    [line({ op: 'apply', version: 0, config: base }), 'bad_request'],
    [line({ op: 'apply', version: 2 }), 'bad_request'],
    [line({ op: 'status', extra: true }), 'bad_request'],
    [line({ op: 'apply', version: 2, config: { ...base, listen: 'nowhere' } }), 'invalid_config'],
    [line({ op: 'apply', version: 2, config: { ...base, surprise: 1 } }), 'invalid_config'],
    [line({ op: 'apply', version: 2, config: { ...base, acl: { ...base.acl, peers: [] } } }), 'invalid_config'],
    [line({ op: 'apply', version: 2, config: { ...base, peers: base.acl.peers } }), 'invalid_config'],
    [line(null), 'bad_request'],
  ])('answers %s with error %s and keeps the running config', (request, code) => {
    const control = new VertexControl({ config: base, version: 1 });
    const running = control.running;
    expect(control.handleLine(request)).toMatchObject({ result: 'error', code });
    expect(control.running).toBe(running);
  });

  it('names the version in the error answer when the request carried one', () => {
    const control = new VertexControl({ config: base, version: 1 });
    expect(control.handleLine(line({ op: 'apply', version: 3, config: { ...base, node: 'NOT A LABEL' } }))).toMatchObject({
      code: 'invalid_config',
      version: 3,
    });
  });
});
