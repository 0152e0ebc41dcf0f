import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { readdirSync, readFileSync } from "node:fs";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../../core/testing/platform.js";
import { NATIVE_ENV, NATIVE_THREAD_NAME } from "./fast-path.js";
import { clientPortAnsweredBy, createRecord, createZone, encodeQuery, garbageFlood, rcodeOf, startDnsPlatform, udpAsk, udpRaw } from "../../testing/helpers.js";
import { formerrReply, screenQuery } from "../wire-screen.js";

const Z = "native.example";
const addresses = (m: Buffer) => (packet.decode(m).answers ?? []).filter((a) => a.type === "A").map((a: any) => a.data as string);

/** Thread names of a process, from /proc. */
const threadNames = (pid: number) => readdirSync(`/proc/${pid}/task`).map((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim());

/** The same bytes apart from the 2-byte id. */
function assertSameButId(a: Buffer, b: Buffer, what: string): void {
  assert.deepEqual(a.subarray(2), b.subarray(2), what);
}

async function sendAll(port: number, msgs: Buffer[]): Promise<void> {
  const s = dgram.createSocket("udp4");
  s.on("message", () => {});
  for (const m of msgs) await new Promise<void>((resolve) => s.send(m, port, "127.0.0.1", () => resolve()));
  s.close();
}

/** Datagrams no client should send: too short, random, corrupted copies of a real query, oversized. */
function garbage(valid: Buffer): Buffer[] {
  const out: Buffer[] = [];
  const rnd = (n: number) => Math.floor(Math.random() * n);
  for (let i = 0; i < 12; i++) out.push(Buffer.alloc(i, 0x41));
  for (let i = 0; i < 300; i++) {
    const b = Buffer.alloc(12 + rnd(500));
    for (let j = 0; j < b.length; j++) b[j] = rnd(256);
    out.push(b);
  }
  for (let i = 0; i < 300; i++) {
    const b = Buffer.from(valid.subarray(0, 12 + rnd(valid.length - 11)));
    for (let k = 0; k < 3; k++) b[rnd(b.length)] = rnd(256);
    out.push(b);
  }
  out.push(Buffer.alloc(65_507, 0xff), Buffer.concat([valid, Buffer.alloc(60_000)]));
  return out;
}

for (const path of ["native", "js"] as const) {
  describe(`DNS over UDP, cached answers sent ${path === "native" ? "by the native addon" : "from JavaScript"}`, () => {
    let p: TestPlatform;
    let port: number;
    let zoneId: string;
    let answering: number;
    let paused: number | undefined;
    /** The client port every query here is sent from (native path), so they all reach `answering` and its cache. */
    let from: number | undefined;

    // Two answering processes (one would mean UDP in the main process), and every query goes to the same one and its
    // cache. Native path: each process has its own socket and the kernel keeps a client port on one of them, so queries
    // come from a port `answering` reads. JavaScript path (one socket shared by both): the other is stopped throughout.
    // No answers built ahead (prewarm.test.ts): they would be sent to the stopped process too, which then could not
    // confirm the next change's flush.
    before(async () => {
      ({ p, port } = await startDnsPlatform(["--dns-workers", "2", "--dns-prewarm", "0"], undefined, path === "js" ? { [NATIVE_ENV]: "0" } : {}));
      zoneId = await createZone(p, Z);
      const pids = [...p.logs().matchAll(/"child_pid":(\d+)[^\n]*"dns answering process started"/g)].map((m) => Number(m[1]));
      answering = pids[0];
      if (path === "native") from = await clientPortAnsweredBy(port, pids, answering);
      else process.kill((paused = pids[1]), "SIGSTOP");
    });
    after(async () => {
      if (paused) process.kill(paused, "SIGCONT");
      await p?.dispose();
    });

    it("takes the path asked for and says which in the log", () => {
      if (path === "native") {
        assert.match(p.logs(), /send cached answers natively/, "the addon must load when built (npm run build needs g++ and make)");
        assert.ok(threadNames(answering).includes(NATIVE_THREAD_NAME));
      } else {
        assert.match(p.logs(), new RegExp(`native UDP path unavailable[^\\n]*${NATIVE_ENV}=0|${NATIVE_ENV}=0[^\\n]*native UDP path unavailable`));
        assert.ok(!threadNames(answering).includes(NATIVE_THREAD_NAME));
      }
    });

    it("answers a repeated question with the first answer's bytes and the new id (plain, EDNS, NXDOMAIN, truncated)", async () => {
      await createRecord(p, zoneId, { type: "A", name: "www", content: "10.8.0.1", ttl: 300 });
      for (let i = 0; i < 6; i++) await createRecord(p, zoneId, { type: "TXT", name: "big", content: `"${String(i).repeat(200)}"`, ttl: 300 });
      const cases: [string, string, { edns?: number }][] = [
        [`www.${Z}`, "A", {}],
        [`www.${Z}`, "A", { edns: 1232 }],
        [`nothing.${Z}`, "A", {}],
        [`big.${Z}`, "TXT", {}],
        [`big.${Z}`, "TXT", { edns: 4096 }],
      ];
      for (const [name, type, opts] of cases) {
        const first = await udpAsk(port, encodeQuery(name, type, { ...opts, id: 0x1111 }), from);
        const second = await udpAsk(port, encodeQuery(name, type, { ...opts, id: 0xbeef }), from);
        assert.equal(first.readUInt16BE(0), 0x1111);
        assert.equal(second.readUInt16BE(0), 0xbeef);
        assertSameButId(first, second, `${name} ${type} ${JSON.stringify(opts)}`);
      }
      const tc = packet.decode(await udpAsk(port, encodeQuery(`big.${Z}`, "TXT"), from));
      assert.ok((tc.flags ?? 0) & (1 << 9), "TC without EDNS");
      assert.equal(rcodeOf(packet.decode(await udpAsk(port, encodeQuery(`nothing.${Z}`, "A"), from))), 3);
    });

    it("answers cached questions while the main process is stopped (the answering process alone sends them)", async () => {
      const q = encodeQuery(`www.${Z}`, "A");
      await udpAsk(port, q, from);
      process.kill(p.process.pid!, "SIGSTOP");
      try {
        assert.deepEqual(addresses(await udpAsk(port, encodeQuery(`www.${Z}`, "A"), from)), ["10.8.0.1"]);
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
    });

    it("serves signed answers (DO) from its cache as it serves unsigned ones; turning DNSSEC on or off reaches it at once", async () => {
      await createRecord(p, zoneId, { type: "A", name: "sec", content: "10.8.2.1", ttl: 300 });
      const ask = async (id: number) => udpAsk(port, encodeQuery(`sec.${Z}`, "A", { edns: 1232, dnssecOk: true, id }), from);
      const signatures = (m: Buffer) => (packet.decode(m).answers ?? []).filter((a) => a.type === "RRSIG").length;
      assert.equal(signatures(await ask(1)), 0, "not signed yet (and now cached unsigned)");
      assert.equal((await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active" })).status, 200);
      const first = await ask(0x2222);
      assert.equal(signatures(first), 1);
      process.kill(p.process.pid!, "SIGSTOP");
      let second: Buffer;
      try {
        second = await ask(0x3333);
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
      assertSameButId(first, second, "the signed answer, from the answering process's cache alone");
      assert.equal((await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "disabled" })).status, 200);
      assert.equal(signatures(await ask(4)), 0);
    });

    it(
      "answers a question differing from a cached one only in its id, the case of its name, RD/CD or EDNS size from the cache (native)",
      { skip: path === "js" && "the JavaScript path keys its cache by the exact query" },
      async () => {
        await createRecord(p, zoneId, { type: "A", name: "mixed", content: "10.8.3.1", ttl: 300 });
        for (let i = 0; i < 6; i++) await createRecord(p, zoneId, { type: "TXT", name: "wide", content: `"${String(i).repeat(200)}"`, ttl: 300 });
        // Cached as these exact queries (RD set, lowercase): plain, and with EDNS 4096 for the wide answer.
        await udpAsk(port, encodeQuery(`mixed.${Z}`, "A"), from);
        await udpAsk(port, encodeQuery(`mixed.${Z}`, "A", { edns: 1232 }), from);
        const whole = await udpAsk(port, encodeQuery(`wide.${Z}`, "TXT", { edns: 4096 }), from);
        assert.ok(whole.length > 1232 && !(packet.decode(whole).flags! & packet.TRUNCATED_RESPONSE));
        const ask = (name: string, type: string, flags: number, edns?: number) =>
          packet.encode({
            type: "query",
            id: 0x4242,
            flags,
            questions: [{ type: type as packet.RecordType, name, class: "IN" }],
            additionals: edns ? [{ type: "OPT", name: ".", udpPayloadSize: edns, flags: 0 } as packet.Answer] : [],
          });
        process.kill(p.process.pid!, "SIGSTOP");
        try {
          for (const [flags, edns] of [
            [packet.CHECKING_DISABLED, undefined],
            [packet.RECURSION_DESIRED, 1400],
          ] as const) {
            const r = await udpRaw(port, ask(`MiXeD.NATIVE.example`, "A", flags, edns), 5000, from);
            const d = packet.decode(r);
            assert.equal(d.id, 0x4242);
            assert.equal(d.questions![0].name, "MiXeD.NATIVE.example", "the question's case is echoed");
            assert.equal(d.flags! & (packet.RECURSION_DESIRED | packet.CHECKING_DISABLED), flags, "RD and CD are echoed");
            assert.deepEqual(addresses(r), ["10.8.3.1"]);
            assert.equal(
              (d.additionals ?? []).some((a) => a.type === "OPT"),
              edns !== undefined,
            );
          }
          assert.equal(packet.decode(await udpRaw(port, ask(`WIDE.native.example`, "TXT", 0, 4000), 5000, from)).answers!.length, 6);
          // A client accepting less than the whole answer must get it truncated, which only the main process builds.
          await assert.rejects(udpRaw(port, ask(`WIDE.native.example`, "TXT", 0, 1232), 1000, from), /no UDP reply/);
        } finally {
          process.kill(p.process.pid!, "SIGCONT");
        }
        const truncated = packet.decode(await udpAsk(port, ask(`WIDE.native.example`, "TXT", 0, 1232), from));
        assert.ok(truncated.flags! & packet.TRUNCATED_RESPONSE);
      },
    );

    it("answers a change as soon as the API call returns", async () => {
      const rec = await createRecord(p, zoneId, { type: "A", name: "moving", content: "10.8.1.1", ttl: 300 });
      for (let i = 0; i < 3; i++) assert.deepEqual(addresses(await udpAsk(port, encodeQuery(`moving.${Z}`, "A"), from)), ["10.8.1.1"]);
      for (const next of ["10.8.1.2", "10.8.1.3"]) {
        assert.equal((await p.api("PATCH", `/zones/${zoneId}/dns_records/${rec.id}`, { content: next })).status, 200);
        assert.deepEqual(addresses(await udpAsk(port, encodeQuery(`moving.${Z}`, "A"), from)), [next]);
      }
      assert.equal((await p.api("DELETE", `/zones/${zoneId}/dns_records/${rec.id}`)).status, 200);
      assert.equal(rcodeOf(packet.decode(await udpAsk(port, encodeQuery(`moving.${Z}`, "A"), from))), 3);
    });

    it("answers malformed datagrams itself (FORMERR, or nothing), even with the main process stopped", async () => {
      const valid = encodeQuery(`www.${Z}`, "A", { edns: 1232 });
      const malformed = garbage(valid).filter((m) => screenQuery(m) !== "answer");
      malformed.forEach((m, i) => m.length >= 2 && m.writeUInt16BE(i, 0));
      const formerr = malformed.filter((m) => screenQuery(m) === "formerr");
      const dropped = malformed.filter((m) => screenQuery(m) === "drop");
      assert.ok(formerr.length > 300 && dropped.length >= 12);
      process.kill(p.process.pid!, "SIGSTOP");
      try {
        for (const m of formerr) assert.deepEqual(await udpAsk(port, m, from), formerrReply(m), m.toString("hex"));
        // The only reply to the dropped ones and a last malformed query is the last one's: replies come in order.
        const s = dgram.createSocket("udp4");
        const replies: Buffer[] = [];
        s.on("message", (m) => replies.push(m));
        for (const m of dropped) await new Promise<void>((resolve) => s.send(m, port, "127.0.0.1", () => resolve()));
        s.send(formerr[0], port, "127.0.0.1");
        const until = Date.now() + 10_000;
        while (replies.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        s.close();
        assert.deepEqual(replies, [formerrReply(formerr[0])]);
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
    });

    it("answers every valid query interleaved with a flood of garbage datagrams", async () => {
      const queries = Array.from({ length: 100 }, (_, i) => (i % 2 ? encodeQuery(`www.${Z}`, "A") : encodeQuery(`flood-${i}.${Z}`, "A")));
      await udpAsk(port, queries[1], from);
      const { replies, garbageReplies } = await garbageFlood(port, 5000, queries);
      // One not answered during the flood is asked again, as a resolver would; it must then be answered.
      const answers: Buffer[] = [];
      for (const [i, q] of queries.entries()) answers.push(replies[i] ?? (await udpAsk(port, q, from))); // one at a time: one port
      for (const [i, reply] of answers.entries()) {
        if (i % 2) assert.deepEqual(addresses(reply), ["10.8.0.1"], `query ${i}`);
        else assert.equal(rcodeOf(packet.decode(reply)), 3, `query ${i}`);
      }
      assert.ok(garbageReplies > 0, "the garbage got FORMERR");
    });

    it("keeps answering after short, random, corrupted and oversized datagrams", async () => {
      const valid = encodeQuery(`www.${Z}`, "A", { edns: 1232 });
      await udpAsk(port, valid, from);
      for (let round = 0; round < 3; round++) await sendAll(port, garbage(valid));
      assert.deepEqual(addresses(await udpAsk(port, encodeQuery(`www.${Z}`, "A"), from)), ["10.8.0.1"]);
      assert.deepEqual(addresses(await udpAsk(port, valid, from)), ["10.8.0.1"]);
      assert.doesNotMatch(p.logs(), /dns answering process exited/);
      assert.ok(threadNames(answering).length > 0, "the same answering process still runs");
    });
  });
}
