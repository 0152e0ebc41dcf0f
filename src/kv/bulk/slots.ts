/**
 * A counting semaphore with a bounded queue: `size` holders at a time, up to `queue` more waiting, and past that
 * the refusal `full` makes (a 429). Used to bound how many large bulk writes run at once.
 */
export class Slots {
  private active = 0;
  private readonly waiting: { resolve(): void; reject(err: Error): void }[] = [];

  constructor(
    private readonly size: number,
    private readonly queue: number,
    private readonly full: () => Error,
  ) {}

  /** Resolves with the release function once a slot is free; throws `full()` when the queue is full. */
  async acquire(): Promise<() => void> {
    if (this.active < this.size) this.active++;
    else if (this.waiting.length >= this.queue) throw this.full();
    // A released slot passes straight to the next waiter, so `active` stays counted for it.
    else await new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.resolve();
      else this.active--;
    };
  }

  /** Fails every waiter with `err`. */
  close(err: Error): void {
    for (const w of this.waiting.splice(0)) w.reject(err);
  }
}
