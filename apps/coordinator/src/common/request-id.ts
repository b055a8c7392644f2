import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header a request id comes in on (from a proxy or a client) and goes back out on. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * An id taken from a request: short, and of characters that need no escaping in a header or a log
 * search (a UUID, a proxy's hex or `host:counter` ids). Anything else is replaced, not cleaned, so a
 * client cannot put line breaks or megabytes into every log line of its requests.
 */
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id for its log line and its answer: the incoming X-Request-Id when it is acceptable, a new UUID otherwise. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && ACCEPTED.test(given) ? given : randomUUID();
}
