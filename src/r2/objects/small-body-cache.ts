/**
 * Bytes of small objects, by content id, least recently used out first. Content files are immutable and
 * their ids never reused, so an entry can never be stale; it is dropped when its content is removed only to
 * give the memory back early. Workers mostly read small objects again and again, and this saves the
 * open/read/close of a file on each read.
 */
export class SmallBodyCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(
    readonly maxEntryBytes = 64 * 1024,
    private readonly maxTotalBytes = 32 * 1024 * 1024,
  ) {}

  get(id: string): Buffer | undefined {
    const buf = this.entries.get(id);
    if (buf) {
      this.entries.delete(id);
      this.entries.set(id, buf);
    }
    return buf;
  }

  set(id: string, buf: Buffer): void {
    if (buf.length > this.maxEntryBytes || this.entries.has(id)) return;
    this.entries.set(id, buf);
    this.bytes += buf.length;
    for (const [old, b] of this.entries) {
      if (this.bytes <= this.maxTotalBytes) break;
      this.entries.delete(old);
      this.bytes -= b.length;
    }
  }

  drop(ids: readonly string[]): void {
    for (const id of ids) {
      const b = this.entries.get(id);
      if (b) {
        this.entries.delete(id);
        this.bytes -= b.length;
      }
    }
  }
}
