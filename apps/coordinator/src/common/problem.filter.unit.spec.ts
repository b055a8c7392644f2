import pino from 'pino';
import { DomainError } from './domain-error.js';
import { databaseUnavailable, toProblem } from './problem.filter.js';

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

  /** An error as the PostgreSQL client or the socket under it makes one. */
  const failure = (message: string, code?: string, cause?: unknown) =>
    Object.assign(new Error(message, cause === undefined ? {} : { cause }), code ? { code } : {});

  it('answers 503 database_unavailable when the database is away, and names no address', () => {
    const away = [
      failure('connect ECONNREFUSED 10.0.0.5:5432', 'ECONNREFUSED'),
      failure('terminating connection due to administrator command', '57P01'),
      failure('the database system is starting up', '57P03'),
      failure('sorry, too many clients already', '53300'),
      failure('server closed the connection unexpectedly', '08006'),
      failure('Connection terminated unexpectedly'),
      failure('Client has encountered a connection error and is not queryable'),
      failure('timeout exceeded when trying to connect'),
      new AggregateError([failure('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')], ''),
      failure('query failed', undefined, failure('read ECONNRESET', 'ECONNRESET')),
    ];
    for (const error of away) {
      const problem = toProblem(error, pino({ level: 'silent' }));
      expect({ message: error.message, status: problem.status, code: problem.code }).toEqual({
        message: error.message,
        status: 503,
        code: 'database_unavailable',
      });
      expect(problem.detail).not.toMatch(/5432|10\.0\.0\.5|127\.0\.0\.1/);
    }
  });

  it('leaves a statement the database refused, and any other error, a 500', () => {
    for (const error of [
      failure('duplicate key value violates unique constraint "blobs_pkey"', '23505'),
      failure('syntax error at or near "SELEC"', '42601'),
      new TypeError('x is undefined'),
    ]) {
      expect(databaseUnavailable(error)).toBeNull();
      expect(toProblem(error, pino({ level: 'silent' }))).toMatchObject({ status: 500, code: 'internal' });
    }
  });
});
