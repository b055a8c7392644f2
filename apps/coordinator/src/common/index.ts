/** The ground floor every folder may use: domain errors and their problem+json answer, input parsing, the principal and route access, and the HTTP edge's hardening. */
export { Access, ACCESS_KEY, Anonymous, CurrentPrincipal, WHOLE_FLEET_KEY, WholeFleet, wholeFleetRefusal } from './auth.decorators.js';
export { DomainError } from './domain-error.js';
export { bodyDigestOf, bodyOf, clientErrorHandler, frameworkErrors, hardenHttp, SMALL_BODY_LIMIT, stopReading } from './http-hardening.js';
export { IdleStop } from './idle-stop.js';
export { parseInput } from './parse.js';
export { PinoNestLogger } from './pino-logger.js';
export { actorOf, type Authenticator, type Principal, roleAllows, scopeOf } from './principal.js';
export { clip, PROBLEM_LIMITS, quoteInput } from './problem-bounds.js';
export { ProblemFilter, sendProblem, toProblem } from './problem.filter.js';
export { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
export { schemaCompilersOnFirstUse } from './schema-compilers.js';
export { type FloreteRouteConfig, RouteLimits } from './route-limits.js';
