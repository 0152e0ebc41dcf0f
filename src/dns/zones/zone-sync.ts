import type { Bus, BusEvent } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import type { ZoneService } from "./zone-service.js";

/** The bus area of DNS notices. */
export const DNS_BUS_AREA = "dns";
const ZONE_PREFIX = "zone:";
/** The notice that zone `zoneId` changed (created, edited or deleted): its id, never its content. */
export const zoneChangeNotice = (zoneId: string) => `${ZONE_PREFIX}${zoneId}`;
/** A reload that failed (PostgreSQL away) is tried again after this long. */
const RETRY_MS = 1_000;

/**
 * Keeps this node's zones in memory current with the changes other nodes make: a `zone:<id>` notice from another
 * node reloads that zone from the store, a `resync` (notices may have been lost) compares every zone's serial with
 * the store's and reloads those that differ. Reloads run one at a time, in the zone service's queue of writes, and
 * notices that arrive meanwhile are merged (an import through another node is one reload, not one per record).
 * While the store is unreachable the zones stay as they are (the DNS server keeps answering from them) and the
 * reload is tried again every second until it succeeds.
 */
export class ZoneSync {
  private readonly pending = new Set<string>();
  private everything = false;
  private running: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failing = false;
  private stopped = false;
  private readonly unsubscribe: () => void;
  /** The notices heard that no reload has taken up yet: each is told when the reload that takes it up ends. */
  private waiting: (() => void)[] = [];

  constructor(
    private readonly zones: ZoneService,
    private readonly bus: Pick<Bus, "nodeId" | "subscribe">,
    private readonly log: Logger,
  ) {
    this.unsubscribe = bus.subscribe(DNS_BUS_AREA, (event) => this.heard(event));
  }

  /** Resolves when every notice heard so far has been applied (or has failed and waits for its retry). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    clearTimeout(this.retry);
    this.release(this.waiting.splice(0));
  }

  /**
   * Returns the promise of the reload that takes this notice up, which the bus's barrier waits for: it resolves when
   * that reload ends, also when it failed (the zones then answer from memory until the retry), and never waits for
   * reloads of notices heard after it.
   */
  private heard(event: BusEvent): Promise<void> | undefined {
    if (event.type === "resync") this.everything = true;
    // This node's own changes are in its memory already: they were applied right after their commit.
    else if (event.origin !== this.bus.nodeId && event.what.startsWith(ZONE_PREFIX)) this.pending.add(event.what.slice(ZONE_PREFIX.length));
    else return undefined;
    if (this.stopped) return undefined;
    const applied = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.kick();
    return applied;
  }

  private release(notices: (() => void)[]): void {
    for (const resolve of notices) resolve();
  }

  private kick(): void {
    if (this.running || this.retry || this.stopped) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.pending.size > 0 || this.everything) this.kick();
    });
  }

  private async drain(): Promise<void> {
    // A reload must not race the first read of every zone (it could put back an older copy).
    await this.zones.load();
    while (!this.stopped && (this.pending.size > 0 || this.everything)) {
      const everything = this.everything;
      const ids = [...this.pending];
      this.everything = false;
      this.pending.clear();
      const takenUp = this.waiting.splice(0);
      const done = new Set<string>();
      try {
        if (everything) await this.zones.reloadAll();
        else {
          for (const id of ids) {
            if (this.stopped) break;
            await this.zones.reloadZone(id);
            done.add(id);
          }
        }
      } catch (err) {
        this.everything ||= everything;
        for (const id of ids) if (!done.has(id)) this.pending.add(id);
        if (this.stopped) {
          this.release(takenUp);
          return;
        }
        if (!this.failing) this.log.warn({ err }, "could not reload DNS zones changed through other nodes; answering from memory, retrying");
        this.failing = true;
        this.retry = setTimeout(() => {
          this.retry = undefined;
          this.kick();
        }, RETRY_MS);
        this.retry.unref();
        this.release(takenUp);
        return;
      }
      this.release(takenUp);
      if (this.failing) this.log.info("DNS zones reloaded from the store again");
      this.failing = false;
    }
    // Stopped before a reload took them up.
    if (this.stopped) this.release(this.waiting.splice(0));
  }
}
