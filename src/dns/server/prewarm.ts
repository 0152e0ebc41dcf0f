import * as packet from "dns-packet";
import type { ZoneService } from "../zones/zone-service.js";

/** Answers built per turn of the event loop, so a round never holds the loop for long. */
const CHUNK = 100;
/** A round starts once the zones have not changed for this long: a burst of API writes costs one round, not one each. */
const QUIET_MS = 500;

/**
 * Answers the zones' own questions before anyone asks them: each name with each type it holds (and A/AAAA at a CNAME's
 * owner), as a plain query (RD set, no EDNS). Without this, every question is first asked of the main process once per
 * answering process after start and after every change (each cache is emptied on any change), at many times the cost
 * of a cached answer, and while V8 is still compiling that path; Knot compiles its zones before it answers at all.
 * Answers are only ever built from the zones as they are when built: a change empties the caches (the server's
 * invalidate()) and starts a new round, and one built before a change reaches an answering process before that
 * change's flush (one ordered channel), which then forgets it.
 */
export class Prewarmer {
  private generation = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    /** Most answers per round; 0 turns this off. */
    private readonly limit: number,
    private readonly zones: ZoneService,
    /** Answers a query as a UDP client would be answered, caching it where the server caches (undefined: none). */
    private readonly answer: (query: Buffer) => Buffer | undefined,
    /** Hands a built answer to the answering processes' caches. */
    private readonly offer: (query: Buffer, answer: Buffer) => void,
  ) {}

  /** The zones changed (or the server started): a round once they have been quiet for QUIET_MS. */
  schedule(): void {
    const g = ++this.generation;
    if (this.limit === 0 || this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.round(g), QUIET_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    clearTimeout(this.timer);
  }

  private async round(g: number): Promise<void> {
    let built = 0;
    for (const query of this.questions()) {
      if (g !== this.generation || built >= this.limit) return;
      let a: Buffer | undefined;
      try {
        a = this.answer(query);
      } catch {
        a = undefined; // answered (or not) when a client asks, as before
      }
      if (a) this.offer(query, a);
      if (++built % CHUNK === 0) await new Promise((r) => setImmediate(r));
    }
  }

  private *questions(): Generator<Buffer> {
    for (const zs of this.zones.all()) {
      const byName = new Map<string, Set<string>>();
      for (const r of zs.records.values()) {
        let types = byName.get(r.name);
        // Enough names for a round: a 200,000-record zone is not walked whole for 5,000 answers (a name whose types
        // are not all seen is only asked of the main process later, as without this).
        if (!types && byName.size >= this.limit) break;
        if (!types) byName.set(r.name, (types = new Set()));
        types.add(r.type);
        if (r.type === "CNAME") types.add("A").add("AAAA");
      }
      const apexTypes = byName.get(zs.zone.name) ?? new Set<string>();
      byName.set(zs.zone.name, apexTypes.add("SOA").add("NS"));
      for (const [name, types] of byName)
        for (const type of types) {
          const q = plainQuery(name, type);
          if (q) yield q;
        }
    }
  }
}

/** The query a stub resolver (or dnsperf) sends: RD set, no EDNS; undefined for a type dns-packet cannot write. */
function plainQuery(name: string, type: string): Buffer | undefined {
  try {
    return packet.encode({ type: "query", id: 0, flags: packet.RECURSION_DESIRED, questions: [{ name, type: type as packet.RecordType, class: "IN" }] });
  } catch {
    return undefined;
  }
}
