import type { ContentStore } from "../../core/content/store.js";

/**
 * Content files can be replaced while a reader streams them (an overwrite commits, then unlinks the old
 * bytes). Readers lease the ids they read; removing a leased id waits until the last reader closes.
 */
export class ContentLeases {
  private readonly readers = new Map<string, number>();
  private readonly doomed = new Set<string>();

  constructor(private readonly content: ContentStore) {}

  acquire(ids: readonly string[]): void {
    for (const id of ids) this.readers.set(id, (this.readers.get(id) ?? 0) + 1);
  }

  release(ids: readonly string[]): void {
    for (const id of ids) {
      const n = (this.readers.get(id) ?? 1) - 1;
      if (n > 0) {
        this.readers.set(id, n);
        continue;
      }
      this.readers.delete(id);
      if (this.doomed.delete(id)) this.unlink(id);
    }
  }

  /** Deletes content no row refers to any more, now or once its readers are done. */
  remove(ids: readonly string[]): void {
    for (const id of ids) {
      if (this.readers.has(id)) this.doomed.add(id);
      else this.unlink(id);
    }
  }

  private unlink(id: string): void {
    // A failure here only leaves an orphan file, which the content store's gc removes later.
    this.content.delete(id).catch(() => undefined);
  }
}
