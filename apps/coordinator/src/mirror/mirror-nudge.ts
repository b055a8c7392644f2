import { Injectable } from '@nestjs/common';

/** Tells the mirror worker the ledger moved, so it need not wait for its next poll. Fire and forget. */
@Injectable()
export class MirrorNudge {
  private readonly listeners = new Set<() => void>();

  on(listener: () => void): void {
    this.listeners.add(listener);
  }

  off(listener: () => void): void {
    this.listeners.delete(listener);
  }

  nudge(): void {
    for (const l of this.listeners) l();
  }
}
