import * as packet from "dns-packet";
import type { AnswerEngine, Rr } from "./answer.js";
import type { ZoneState } from "../zones/zone-state.js";

const AA = 1 << 10;
/** Records per transfer message, which keeps each well under the 64 KiB TCP message limit. */
const PER_MESSAGE = 200;

/**
 * The records a secondary receives: what our own server would answer. Proxied names carry the edge
 * addresses (never the origin), and a flattened apex CNAME is sent as the addresses it resolves to,
 * since a CNAME beside the SOA is not a valid zone.
 */
function transferRecords(engine: AnswerEngine, zs: ZoneState): Rr[] {
  const out: Rr[] = [];
  for (const [name, recs] of zs.byName) {
    const flattenedApex = name === zs.zone.name && recs.some((r) => r.type === "CNAME");
    if (engine.isProxied(zs, recs) || flattenedApex) {
      for (const t of ["A", "AAAA"] as const) out.push(...(engine.answer(name, t)?.answers.filter((a) => a.name === name) ?? []));
      for (const r of recs) if (r.type !== "A" && r.type !== "AAAA" && r.type !== "CNAME") out.push(engine.rr(r, name));
      continue;
    }
    for (const r of recs) if (!(name === zs.zone.name && r.type === "NS")) out.push(engine.rr(r, name));
  }
  return out;
}

/** AXFR (RFC 5936): SOA, everything, SOA again, over as many messages as needed. IXFR gets the same full answer. */
export function axfrMessages(engine: AnswerEngine, zs: ZoneState, q: ReturnType<typeof packet.decode>): Buffer[] {
  const soa = engine.soaRr(zs);
  const all = [soa, ...engine.apexNs(zs), ...transferRecords(engine, zs), soa];
  const out: Buffer[] = [];
  for (let i = 0; i < all.length; i += PER_MESSAGE) {
    out.push(
      packet.encode({
        id: q.id,
        type: "response",
        flags: AA,
        questions: i === 0 ? q.questions : [],
        answers: all.slice(i, i + PER_MESSAGE),
        authorities: [],
        additionals: [],
      } as packet.Packet),
    );
  }
  return out;
}
