export type MirrorErrorCode = 'mirror_diverged' | 'checkpoint_moved';

/** The mirror refuses to write: its repository or checkpoint disagrees with what the ledger produces. */
export class MirrorError extends Error {
  constructor(
    readonly code: MirrorErrorCode,
    message: string,
    readonly position: number,
  ) {
    super(message);
    this.name = 'MirrorError';
  }
}
