import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrapeUntil } from "../core/testing/metrics.js";
import { createRecord, createZone, dig, digAvailable, encodeQuery, startDnsPlatform, tcpQuery, udpQuery, udpRaw } from "./testing/helpers.js";

const Z = "metrics-dns.example";
const q = (transport: string, qtype: string, rcode: string) => `transport="${transport}",qtype="${qtype}",rcode="${rcode}"`;
const count = (text: string, transport: string, qtype: string, rcode: string) =>
  sample(text, "edgeplatform_dns_queries_total", q(transport, qtype, rcode)) ?? 0;

// Each mode answers UDP in a different place: the main process (0), answering processes whose native thread answers
// cached queries (2), and answering processes answering from JavaScript (EDGE_DNS_NATIVE=0).
for (const [mode, workers, env] of [
  ["in the main process", "0", {}],
  ["by answering processes (native path)", "2", {}],
  ["by answering processes (JavaScript path)", "2", { EDGE_DNS_NATIVE: "0" }],
] as const) {
  describe(`DNS metrics, UDP answered ${mode}`, () => {
    it("counts queries by transport, question type and response code, and the answer caches, in a format promtool accepts", async (t) => {
      const metricsPort = await freeMetricsPort();
      const { p, port } = await startDnsPlatform(["--dns-workers", workers, "--metrics-port", String(metricsPort)], undefined, { ...process.env, ...env });
      t.after(() => p.dispose());
      const zoneId = await createZone(p, Z);
      await createRecord(p, zoneId, { type: "A", name: `www.${Z}`, content: "192.0.2.1" });
      await createRecord(p, zoneId, { type: "TXT", name: Z, content: "hello" });
      // The same questions ten times each: the first is built by the main process, the rest come from a cache.
      for (let i = 0; i < 10; i++) {
        await udpQuery(port, `www.${Z}`, "A");
        await udpQuery(port, `nowhere.${Z}`, "AAAA");
        await udpQuery(port, "not-ours.example", "A");
      }
      // A type without a label of its own, a FORMERR (two questions), and TCP.
      await udpQuery(port, `www.${Z}`, "NAPTR");
      const twoQuestions = encodeQuery(`www.${Z}`, "A");
      twoQuestions.writeUInt16BE(2, 4);
      await udpRaw(port, Buffer.concat([twoQuestions, twoQuestions.subarray(12)]));
      await tcpQuery(port, encodeQuery(Z, "TXT"));
      await tcpQuery(port, encodeQuery(Z, "TXT"));
      if (await digAvailable) assert.match(await dig(port, [`www.${Z}`, "A"]), /status: NOERROR/);
      const digged = (await digAvailable) ? 1 : 0;

      const url = `http://127.0.0.1:${metricsPort}/metrics`;
      // Answering processes report every few seconds: wait for the totals.
      const text = await scrapeUntil(
        url,
        "every query counted",
        (s) => count(s, "udp", "A", "NOERROR") === 10 + digged && count(s, "udp", "AAAA", "NXDOMAIN") === 10,
      );
      assert.equal(count(text, "udp", "A", "REFUSED"), 10, "a name of no zone of ours");
      assert.equal(count(text, "udp", "other", "NOERROR") + count(text, "udp", "NAPTR", "NOERROR"), 1);
      assert.equal(count(text, "udp", "A", "FORMERR"), 1, "the unreadable query (its first question's type)");
      assert.equal(count(text, "tcp", "TXT", "NOERROR"), 2);
      const lookups = (result: string, process: string) =>
        sample(text, "edgeplatform_dns_answer_cache_lookups_total", `result="${result}",process="${process}"`) ?? 0;
      const hits = lookups("hit", "main") + lookups("hit", "answering");
      assert.ok(hits >= 18, `cached answers (the repeats of the two questions in our zone): ${hits}`);
      if (workers !== "0") assert.ok(lookups("hit", "answering") >= 18, "the answering processes' caches answer the repeats");
      assert.ok(!text.includes(Z), "no name becomes a label");
      await assertPromtoolAccepts(t, text);
    });
  });
}
