import pino from 'pino';
import { DomainError } from './domain-error.js';
import { toProblem } from './problem.filter.js';

describe('toProblem', () => {
  it("keeps a domain error's details beside the problem's members, never over them", () => {
    const problem = toProblem(
      new DomainError('rollout_state', 'cannot be promoted', { rollout: 'r1', status: 'paused', code: 'x', type: 'y', title: 'z', detail: 'w' }),
      pino({ level: 'silent' }),
    );
    expect(problem).toMatchObject({
      status: 409,
      code: 'rollout_state',
      type: 'https://florete.dev/problems/rollout_state',
      title: 'Conflict',
      detail: 'cannot be promoted',
      rollout: 'r1',
    });
  });
});
