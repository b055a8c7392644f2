/** Why the control socket could not start, or why a call to it failed; tests assert on `code`. */
export type VertexControlErrorCode = 'socket_in_use' | 'not_a_socket' | 'unreachable' | 'timeout' | 'closed' | 'bad_answer';

export class VertexControlError extends Error {
  constructor(
    readonly code: VertexControlErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'VertexControlError';
  }
}
