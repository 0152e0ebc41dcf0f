/**
 * Work that must not interleave per key (a zone's writes and reloads of a per-node copy): each runs after the work
 * queued before it under the same key, whatever became of that; keys with nothing queued take no memory.
 */
export class QueueByKey {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const next = (this.tails.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
    this.tails.set(key, next);
    const forget = () => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    };
    next.then(forget, forget);
    return next;
  }
}
