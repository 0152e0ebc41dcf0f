import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as packet from "dns-packet";
import { formerrReply, screenQuery } from "./wire-screen.js";
import { encodeQuery } from "../testing/helpers.js";

const decodes = (m: Buffer) => {
  try {
    packet.decode(m);
    return true;
  } catch {
    return false;
  }
};
const standardQuery = (m: Buffer) => (m.readUInt16BE(2) & (0xf << 11)) === 0;

/** Datagrams near the edge of what dns-packet decodes: real queries with bytes changed, cut or appended, and small-count random headers. */
function nearMisses(n: number): Buffer[] {
  let seed = 7;
  const rnd = (k: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % k;
  const withAnswer = packet.encode({
    type: "query",
    id: 9,
    questions: [{ type: "A", name: "www.example.com" }],
    answers: [{ type: "A", name: "www.example.com", data: "192.0.2.1" }],
    additionals: [{ type: "OPT", name: ".", udpPayloadSize: 1232 } as packet.Answer],
  });
  const bases = [encodeQuery("www.example.com", "A"), encodeQuery("a.b.example.org", "TXT", { edns: 4096 }), withAnswer];
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const m = Buffer.from(bases[i % bases.length]);
    // Bytes after the flags: counts, names, types, records.
    for (let k = rnd(4) + 1; k > 0; k--) m[4 + rnd(m.length - 4)] = rnd(256);
    out.push(rnd(3) === 0 ? m.subarray(0, 12 + rnd(m.length - 11)) : rnd(3) === 0 ? Buffer.concat([m, randomBytes(rnd(30))]) : m);
    const r = randomBytes(12 + rnd(80));
    r[2] &= 0x07; // a standard query header
    for (const at of [4, 6, 8, 10]) r.writeUInt16BE(rnd(3), at);
    out.push(r);
  }
  return out;
}

describe("screening DNS messages before decoding them", () => {
  it("lets real queries through: plain, EDNS, compressed names, other opcodes", () => {
    assert.equal(screenQuery(encodeQuery("www.example.com", "A")), "answer");
    assert.equal(screenQuery(encodeQuery("www.example.com", "AAAA", { edns: 1232 })), "answer");
    assert.equal(screenQuery(encodeQuery(".", "NS")), "answer");
    const notify = packet.encode({ type: "query", id: 1, flags: 4 << 11, questions: [{ type: "SOA", name: "example.com" }] });
    assert.equal(screenQuery(notify), "answer");
    // A question whose name ends in a pointer back into the first one.
    const two = Buffer.from(packet.encode({ type: "query", id: 2, flags: 2 << 11, questions: [{ type: "A", name: "a.example" }] }));
    const second = Buffer.from([1, 0x62, 0xc0, 12 + 2, 0, 1, 0, 1]); // "b" + pointer to "example"
    const m = Buffer.concat([two, second]);
    m.writeUInt16BE(2, 4);
    assert.equal(screenQuery(m), "answer");
    assert.deepEqual(
      packet.decode(m).questions?.map((q) => q.name),
      ["a.example", "b.example"],
    );
  });

  it("drops what is not a query: short datagrams and responses", () => {
    for (let i = 0; i < 12; i++) assert.equal(screenQuery(Buffer.alloc(i)), "drop");
    const response = Buffer.from(encodeQuery("www.example.com", "A"));
    response[2] |= 0x80;
    assert.equal(screenQuery(response), "drop");
  });

  it("marks FORMERR only what dns-packet cannot decode, or a standard query without exactly one question", () => {
    // Random datagrams announce thousands of records, which dns-packet takes ~10 ms to refuse: a few of those suffice.
    const cases = [...nearMisses(20_000), ...Array.from({ length: 50 }, () => randomBytes(12 + Math.floor(Math.random() * 600)))];
    let formerr = 0;
    for (const m of cases) {
      const screen = screenQuery(m);
      if (screen !== "formerr") continue;
      formerr++;
      const qd = m.readUInt16BE(4);
      if (standardQuery(m) && qd !== 1) continue;
      assert.equal(decodes(m), false, `screened as FORMERR but dns-packet decodes ${m.toString("hex")}`);
    }
    assert.ok(formerr > cases.length / 3, `most of these are malformed (${formerr} of ${cases.length})`);
  });

  it("marks random datagrams FORMERR without decoding them (the whole point: no 10 ms decode per datagram)", () => {
    let queries = 0;
    let screened = 0;
    for (let i = 0; i < 5000; i++) {
      const m = randomBytes(12 + Math.floor(Math.random() * 588));
      if (m[2] & 0x80) continue;
      queries++;
      if (screenQuery(m) === "formerr") screened++;
    }
    assert.ok(screened >= queries * 0.999, `${screened} of ${queries} random queries screened`);
  });

  it("refuses names as dns-packet does: labels past the end, forward or self pointers, names over 254 bytes, reserved label types", () => {
    const header = (qd: number) => Buffer.from([0, 1, 0, 0, 0, qd, 0, 0, 0, 0, 0, 0]);
    const q = (name: number[]) => Buffer.concat([header(1), Buffer.from(name), Buffer.from([0, 1, 0, 1])]);
    assert.equal(screenQuery(q([3, 0x61, 0x62, 0x63, 0])), "answer");
    assert.equal(screenQuery(q([9, 0x61, 0])), "formerr", "label past the end");
    assert.equal(screenQuery(q([0xc0, 12])), "formerr", "pointer to itself");
    assert.equal(screenQuery(q([0xc0, 40])), "formerr", "pointer forward");
    assert.equal(screenQuery(q([0x40, 0])), "formerr", "label type 01");
    const long = Array.from({ length: 5 }, () => [63, ...Array(63).fill(0x61)]).flat();
    assert.equal(screenQuery(q([...long, 0])), "formerr", "name over 254 bytes");
    assert.equal(decodes(q([...long, 0])), false);
    assert.equal(screenQuery(q([3, 0x61, 0x62, 0x63, 0]).subarray(0, 18)), "formerr", "type and class cut off");
    const withRecords = (n: number, records: Buffer) => {
      const m = Buffer.concat([q([0]), records]);
      m.writeUInt16BE(n, 10);
      return m;
    };
    const opt = Buffer.from([0, 0, 41, 4, 208, 0, 0, 0, 0, 0, 0]);
    assert.equal(screenQuery(withRecords(1, opt)), "answer");
    assert.equal(decodes(withRecords(1, opt)), true);
    for (const [n, records, why] of [
      [2, Buffer.alloc(0), "two records announced, none there"],
      [1, opt.subarray(0, 8), "a record cut inside its fixed fields"],
      [3, opt, "three records announced, room for one"],
    ] as const) {
      assert.equal(screenQuery(withRecords(n, records)), "formerr", why);
      assert.equal(decodes(withRecords(n, records)), false, why);
    }
  });

  it("builds the FORMERR: the id, QR, the opcode, RD and CD, no sections", () => {
    const m = Buffer.from(encodeQuery("www.example.com", "A", { id: 0xabcd }));
    m.writeUInt16BE((2 << 11) | 0x0100 | 0x0010 | 0x0400, 2);
    const r = formerrReply(m);
    assert.equal(r.length, 12);
    assert.equal(r.readUInt16BE(0), 0xabcd);
    assert.equal(r.readUInt16BE(2), 0x8000 | (2 << 11) | 0x0100 | 0x0010 | 1);
    assert.deepEqual([...r.subarray(4)], Array(8).fill(0));
  });
});
