import { VertexControlError, type VertexControlAnswer } from '#vertex-control';
import { hotReloadVerdict } from './hot-reload.verdict.js';

const apply = (result: 'swapped' | 'unchanged' | 'restart', extra: Partial<VertexControlAnswer> = {}): VertexControlAnswer =>
  ({ result, version: 8, running_version: result === 'restart' ? 7 : 8, changed: [], ...extra }) as VertexControlAnswer;

describe('hot reload verdict', () => {
  it('spares the restart only on swapped and unchanged', () => {
    expect(hotReloadVerdict({ answer: apply('swapped', { changed: ['acl.ingress.web[1]'] }) })).toEqual({ kind: 'applied', answer: 'swapped' });
    expect(hotReloadVerdict({ answer: apply('unchanged') })).toEqual({ kind: 'applied', answer: 'unchanged' });
  });

  it('restarts on a restart answer and says what the vertex said', () => {
    const v = hotReloadVerdict({ answer: apply('restart', { changed: ['listen'], reason: 'changed outside acl: listen' }) });
    expect(v).toEqual({ kind: 'restart', code: 'restart_answer', reason: expect.stringContaining('changed outside acl: listen') });
  });

  it('restarts on every error answer', () => {
    for (const code of ['bad_json', 'bad_request', 'invalid_config', 'line_too_long', 'stale_version', 'version_conflict', 'internal'] as const) {
      const v = hotReloadVerdict({ answer: { result: 'error', code, reason: 'no', version: 8 } });
      expect(v).toEqual({ kind: 'restart', code: 'error_answer', reason: expect.stringContaining(code) });
    }
  });

  it('restarts on a status answer to an apply', () => {
    const status: VertexControlAnswer = {
      result: 'status',
      version: 8,
      pid: 1,
      node: 'alpha',
      mesh: 'm',
      config_sha256: 'a'.repeat(64),
      acl: { ingress: {}, egress: [], peers: [] },
      swaps: 0,
    };
    expect(hotReloadVerdict({ answer: status })).toMatchObject({ kind: 'restart', code: 'bad_answer' });
  });

  it('restarts on every failed call, keeping the client code', () => {
    for (const code of ['timeout', 'unreachable', 'closed', 'bad_answer'] as const) {
      expect(hotReloadVerdict({ error: new VertexControlError(code, 'x') })).toMatchObject({ kind: 'restart', code });
    }
    expect(hotReloadVerdict({ error: new VertexControlError('socket_in_use', 'x') })).toMatchObject({ kind: 'restart', code: 'internal' });
    expect(hotReloadVerdict({ error: new Error('boom') })).toEqual({ kind: 'restart', code: 'internal', reason: 'boom' });
    expect(hotReloadVerdict({ error: 'weird' })).toEqual({ kind: 'restart', code: 'internal', reason: 'weird' });
  });
});
