import { CoreErrors } from "../../core/errors.js";
import { KvErrors } from "../errors.js";
import { KV_LIMITS } from "../limits.js";

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

/**
 * Bulk writes bigger than this, or of unknown size, take one of LARGE_SLOTS: a few at a time keep the memory of
 * their largest entries (a 25 MiB value is ~35 MB of JSON) and the writer's work bounded. Up to LARGE_QUEUE more
 * wait without their bodies being read; past that the answer is 429.
 */
const LARGE_BODY = 1024 * 1024;
const LARGE_SLOTS = 2;
const LARGE_QUEUE = 16;

/** Lets bulk writes in, each backend's writer one of these: large ones a few at a time. */
export class BulkAdmission {
  private readonly large = new Slots(LARGE_SLOTS, LARGE_QUEUE, KvErrors.throttled);

  /**
   * Refuses a body declared over the limit (413) and waits for a slot when it is large; resolves with what to call
   * once the write is over.
   */
  async admit(declaredBytes?: number): Promise<() => void> {
    const declared = declaredBytes ?? NaN;
    if (declared > KV_LIMITS.bulkBodyBytes) throw CoreErrors.bodyTooLarge();
    // A body of unknown length counts as large.
    return declared <= LARGE_BODY ? () => undefined : this.large.acquire();
  }

  /** Fails the bulk writes still waiting with `err`. */
  close(err: Error): void {
    this.large.close(err);
  }
}
