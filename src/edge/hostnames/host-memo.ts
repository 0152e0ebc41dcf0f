/**
 * Answers about a request's Host worked out once per Host and reused while nothing they depend on changes: the
 * dispatch's class of the host and whether Workers may serve it, the proxy's origin lookup. Every request of a tenant
 * asks these, and they only change when zones, records, Workers routes or Custom Domains do.
 *
 * `generation` names the state the answers were worked out from (the zones' change counter, the route table's, …):
 * when it differs from the one the memo was filled under, every entry is dropped before the next answer, so a change
 * is obeyed by the first request after it. Bounded: at most `maxEntries` hosts (then it starts again empty), and a
 * Host longer than a DNS name can be is never kept (a client making up hosts costs what it cost without the memo).
 */
export class HostMemo<T> {
  private entries = new Map<string, T>();
  private filledUnder: number;

  constructor(
    private readonly compute: (host: string) => T,
    private readonly generation: () => number,
    private readonly maxEntries = 4096,
  ) {
    this.filledUnder = generation();
  }

  /** The answer for `host` (the Host header as sent; "" when none). */
  get(host: string): T {
    const now = this.generation();
    if (now !== this.filledUnder) {
      this.entries = new Map();
      this.filledUnder = now;
    }
    let known = this.entries.get(host);
    if (known === undefined) {
      known = this.compute(host);
      if (host.length <= MAX_KEPT_HOST) {
        if (this.entries.size >= this.maxEntries) this.entries = new Map();
        this.entries.set(host, known);
      }
    }
    return known;
  }

  /** How many hosts are kept (tests). */
  get size(): number {
    return this.entries.size;
  }
}

/** A Host header longer than this (a DNS name is at most 253 characters, a port and brackets add a few) is not kept. */
const MAX_KEPT_HOST = 300;
