/**
 * Stops something (a pool of threads) once it has had no work for `idleMs`, so an idle coordinator
 * does not keep its heaps. `cancel` when work starts or the thing is closed; `arm` when the last
 * piece of work has finished. The timer never keeps the process alive.
 */
export class IdleStop {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly idleMs: number,
    private readonly stop: () => void,
  ) {}

  arm(): void {
    this.cancel();
    this.timer = setTimeout(this.stop, this.idleMs).unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
