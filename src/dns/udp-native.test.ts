import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { readdirSync, readFileSync } from "node:fs";
import * as packet from "dns-packet";
import type { TestPlatform } from "../core/testing/platform.js";
import { NATIVE_ENV, NATIVE_THREAD_NAME } from "./udp-fast.js";
import { createRecord, createZone, encodeQuery, rcodeOf, startDnsPlatform, udpRaw } from "./test-helpers.js";

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

/**
 * A query as a resolver sends it: again after a second without a reply. Right after a burst of oversized
 * datagrams the socket's receive buffer can be full, and the kernel then drops the next datagram.
 */
async function askWithRetries(port: number, msg: Buffer): Promise<Buffer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await udpRaw(port, msg, 1000);
    } catch (err) {
      if (attempt === 5) throw err;
    }
  }
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
    let paused: number;

    // Two answering processes (one would mean UDP in the main process), one of them stopped throughout, so
    // every query goes to the same process and its cache.
    before(async () => {
      ({ p, port } = await startDnsPlatform(["--dns-workers", "2"], undefined, path === "js" ? { [NATIVE_ENV]: "0" } : {}));
      zoneId = await createZone(p, Z);
      [answering, paused] = [...p.logs().matchAll(/"child_pid":(\d+)[^\n]*"dns answering process started"/g)].map((m) => Number(m[1]));
      process.kill(paused, "SIGSTOP");
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
        const first = await udpRaw(port, encodeQuery(name, type, { ...opts, id: 0x1111 }));
        const second = await udpRaw(port, encodeQuery(name, type, { ...opts, id: 0xbeef }));
        assert.equal(first.readUInt16BE(0), 0x1111);
        assert.equal(second.readUInt16BE(0), 0xbeef);
        assertSameButId(first, second, `${name} ${type} ${JSON.stringify(opts)}`);
      }
      const tc = packet.decode(await udpRaw(port, encodeQuery(`big.${Z}`, "TXT")));
      assert.ok((tc.flags ?? 0) & (1 << 9), "TC without EDNS");
      assert.equal(rcodeOf(packet.decode(await udpRaw(port, encodeQuery(`nothing.${Z}`, "A")))), 3);
    });

    it("answers cached questions while the main process is stopped (the answering process alone sends them)", async () => {
      const q = encodeQuery(`www.${Z}`, "A");
      await udpRaw(port, q);
      process.kill(p.process.pid!, "SIGSTOP");
      try {
        assert.deepEqual(addresses(await udpRaw(port, encodeQuery(`www.${Z}`, "A"))), ["10.8.0.1"]);
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
    });

    it("answers a change as soon as the API call returns", async () => {
      const rec = await createRecord(p, zoneId, { type: "A", name: "moving", content: "10.8.1.1", ttl: 300 });
      for (let i = 0; i < 3; i++) assert.deepEqual(addresses(await udpRaw(port, encodeQuery(`moving.${Z}`, "A"))), ["10.8.1.1"]);
      for (const next of ["10.8.1.2", "10.8.1.3"]) {
        assert.equal((await p.api("PATCH", `/zones/${zoneId}/dns_records/${rec.id}`, { content: next })).status, 200);
        assert.deepEqual(addresses(await udpRaw(port, encodeQuery(`moving.${Z}`, "A"))), [next]);
      }
      assert.equal((await p.api("DELETE", `/zones/${zoneId}/dns_records/${rec.id}`)).status, 200);
      assert.equal(rcodeOf(packet.decode(await udpRaw(port, encodeQuery(`moving.${Z}`, "A")))), 3);
    });

    it("keeps answering after short, random, corrupted and oversized datagrams", async () => {
      const valid = encodeQuery(`www.${Z}`, "A", { edns: 1232 });
      await udpRaw(port, valid);
      for (let round = 0; round < 3; round++) await sendAll(port, garbage(valid));
      assert.deepEqual(addresses(await askWithRetries(port, encodeQuery(`www.${Z}`, "A"))), ["10.8.0.1"]);
      assert.deepEqual(addresses(await askWithRetries(port, valid)), ["10.8.0.1"]);
      assert.doesNotMatch(p.logs(), /dns answering process exited/);
      assert.ok(threadNames(answering).length > 0, "the same answering process still runs");
    });
  });
}
