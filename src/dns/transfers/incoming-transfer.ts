import { randomBytes } from "node:crypto";
import type * as packet from "dns-packet";
import type { DnsRecord } from "../model.js";
import { now, type ZoneState } from "../zones/zone-state.js";
import { incomingRecord, recordKey, soaOf, type IncomingRecord } from "./incoming-records.js";

/** Records looked at between two turns of the event loop once the answer is in, so a large zone never stalls answering. */
const YIELD_EVERY = 1000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a transfer changes in the zone: records added or changed (by id), and ids of records removed. */
export interface ZoneChanges {
  upserts: DnsRecord[];
  deletes: string[];
}

/** Record ids (as zone-state's newId: 16 random bytes in hex) drawn from the CSPRNG a batch at a time: one call per record cost seconds on a 200,000-record transfer. */
class IdBatch {
  private pool = Buffer.alloc(0);
  private at = 0;

  next(): string {
    if (this.at === this.pool.length) {
      this.pool = randomBytes(16 * YIELD_EVERY);
      this.at = 0;
    }
    this.at += 16;
    return this.pool.toString("hex", this.at - 16, this.at);
  }
}

/**
 * An AXFR or IXFR answer taken in one message at a time (xfr-client.ts streamXfr) and turned at once into what the
 * zone will hold, so the decoded messages die young instead of a whole zone of dns-packet objects living until the
 * end (they all survived into V8's old space, and one full collection of a 600 MB heap held the loop for 400 ms).
 *
 * A whole zone (AXFR, or an IXFR answered with the whole zone) keeps one entry per distinct record: the zone's own
 * record when it stays as it is (its id kept, so the API's ids are stable), a copy with the new TTL, or a new
 * record. Differences (IXFR, RFC 1995 §4) keep the last word on each record they name. Nothing touches the zone:
 * the caller writes changes() in one store transaction once the answer is complete, and drops this when it is not.
 */
export class IncomingTransfer {
  /** The answer's first record: the primary's SOA, the serial the zone will have. */
  private soa?: packet.Answer;
  private count = 0;
  /**
   * "whole": every record of the zone follows; "diff": differences from our serial; "other": differences from
   * another serial, which cannot be applied (the caller asks AXFR).
   */
  private form: "whole" | "diff" | "other" | undefined;
  private readonly whole = new Map<string, DnsRecord>();
  private readonly diff = new Map<string, { name: string; record?: IncomingRecord }>();
  /** In differences: whether records are being added (after a new SOA) or removed (after an old one). */
  private adding = true;
  private readonly ids = new IdBatch();
  private readonly createdOn = now();
  /** Records of the primary the zone does not keep (DNSSEC records, types the platform does not store). */
  skipped = 0;

  constructor(
    private readonly zs: ZoneState,
    private readonly type: "AXFR" | "IXFR",
    /** Told why a record is not kept, for the first few. */
    private readonly onSkipped: (why: string) => void = () => {},
  ) {}

  /** The records of one message, in order (the answer's validity, signatures and end are xfr-client's business). */
  take(rrs: readonly packet.Answer[]): void {
    for (const rr of rrs) this.add(rr);
  }

  private add(rr: packet.Answer): void {
    const index = this.count++;
    if (index === 0) {
      this.soa = rr;
      return;
    }
    if (index === 1) {
      if (this.type === "AXFR" || rr.type !== "SOA") this.form = "whole";
      else this.form = soaOf(rr).serial === this.zs.zone.serial ? "diff" : "other";
    }
    switch (this.form) {
      case "whole":
        // The closing SOA (or, in an IXFR sent as a whole zone, the same): the zone's SOA is the first record.
        if (rr.type !== "SOA") this.addWhole(rr);
        return;
      case "diff":
        // Each SOA inside turns removing into adding and back, starting with removing (the old SOA comes first).
        if (rr.type === "SOA") this.adding = !this.adding;
        else this.addDifference(rr);
        return;
    }
  }

  private convert(rr: packet.Answer): IncomingRecord | undefined {
    const c = incomingRecord(rr, this.zs.zone.name);
    if ("record" in c) return c.record;
    if (++this.skipped <= 3) this.onSkipped(c.skipped);
    return undefined;
  }

  private addWhole(rr: packet.Answer): void {
    const w = this.convert(rr);
    if (!w) return;
    const key = recordKey(w);
    const held = this.held(w.name, key);
    this.whole.set(key, held ? this.withTtl(held, w.ttl) : this.created(w));
  }

  private addDifference(rr: packet.Answer): void {
    const w = this.convert(rr);
    if (w) this.diff.set(recordKey(w), { name: w.name, record: this.adding ? w : undefined });
  }

  /** The zone's record with this key (found among its records of that name: no index of the whole zone by key). */
  private held(name: string, key: string): DnsRecord | undefined {
    return this.zs.at(name).find((r) => recordKey(r) === key);
  }

  private withTtl(held: DnsRecord, ttl: number): DnsRecord {
    return held.ttl === ttl ? held : { ...held, ttl, modified_on: now() };
  }

  private created(w: IncomingRecord): DnsRecord {
    return secondaryRecord(w, this.zs.zone.id, this.ids.next(), this.createdOn);
  }

  /** The primary's serial and SOA, from the answer's first record. */
  primary(): ReturnType<typeof soaOf> {
    if (!this.soa) throw new Error("no answer taken");
    return soaOf(this.soa);
  }

  /** Whether the answer can be applied: a whole zone, or differences from our serial (not a lone SOA, not differences from another serial). */
  usable(): boolean {
    return this.form === "whole" || this.form === "diff";
  }

  /** Whether the answer was the whole zone (which also says how many of its records were skipped). */
  isWhole(): boolean {
    return this.form === "whole";
  }

  /** The changes that make the zone's records the answer's, computed a bounded number of records per turn. */
  async changes(): Promise<ZoneChanges> {
    const upserts: DnsRecord[] = [];
    const deletes: string[] = [];
    let n = 0;
    if (this.form === "whole") {
      for (const r of this.zs.records.values()) {
        if (++n % YIELD_EVERY === 0) await yieldToLoop();
        if (this.whole.get(recordKey(r))?.id !== r.id) deletes.push(r.id);
      }
      for (const r of this.whole.values()) {
        if (++n % YIELD_EVERY === 0) await yieldToLoop();
        if (this.zs.records.get(r.id) !== r) upserts.push(r);
      }
      return { upserts, deletes };
    }
    for (const [key, { name, record }] of this.diff) {
      if (++n % YIELD_EVERY === 0) await yieldToLoop();
      const held = this.held(name, key);
      if (!record) {
        if (held) deletes.push(held.id);
      } else if (!held) upserts.push(this.created(record));
      else if (held.ttl !== record.ttl) upserts.push(this.withTtl(held, record.ttl));
    }
    return { upserts, deletes };
  }
}

/**
 * A record a transfer brought, as the zone stores it (nothing of the platform's own: no proxying, comment, tags).
 * Built field by field, not by spreading `w` into a literal with more fields: V8 then gave each of 200,000 records
 * a hidden class of its own (about 750 bytes a record instead of 250, and 10 to 40 times the time to build).
 */
export function secondaryRecord(w: IncomingRecord, zoneId: string, id: string, createdOn: string): DnsRecord {
  return {
    id,
    zone_id: zoneId,
    name: w.name,
    type: w.type,
    content: w.content,
    data: w.data,
    priority: w.priority,
    ttl: w.ttl,
    proxied: false,
    comment: null,
    tags: [],
    settings: {},
    created_on: createdOn,
    modified_on: createdOn,
    comment_modified_on: null,
    tags_modified_on: null,
  };
}
