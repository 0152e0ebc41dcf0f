/**
 * Lets an event that a client can cause at will (a refused connection, a refused transfer) reach the log at
 * most once per interval, with how many happened since the last line: a flood of them cannot flood the log.
 */
export class LogThrottle {
  private since = 0;
  private last = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalMs: number) {}

  /** Counts one event; calls write(count of events since the last line, this one included) when a line is due. */
  hit(write: (count: number) => void): void {
    this.since++;
    const now = Date.now();
    if (now - this.last < this.intervalMs) return;
    this.last = now;
    const count = this.since;
    this.since = 0;
    write(count);
  }
}
