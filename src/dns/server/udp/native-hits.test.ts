import assert from "node:assert/strict";
import { test } from "node:test";
import packet from "dns-packet";
import { answerKey } from "../query-counts.js";
import { encodeQuery, rcodeOf, udpAsk } from "../../testing/helpers.js";
import { loadNativeUdp } from "./fast-path.js";

const loaded = loadNativeUdp();
const skip = "why" in loaded ? `the native path is not loaded: ${loaded.why}` : false;

/** An answer to `query` (its question, one A record), as the main process would build it. */
function answerTo(query: Buffer, rcode: "NOERROR" | "NXDOMAIN" = "NOERROR"): Buffer {
  const q = packet.decode(query);
  return packet.encode({
    type: "response",
    id: q.id,
    flags: packet.AUTHORITATIVE_ANSWER | (rcode === "NXDOMAIN" ? 3 : 0),
    questions: q.questions,
    answers: rcode === "NOERROR" ? [{ type: "A", name: q.questions![0].name, ttl: 300, data: "198.51.100.7" }] : [],
  });
}

/** hitCounts() read as { "name type rcode": count } (answerKey's reading of each question), and its `lost`. */
function readHits(): { counts: Record<string, number>; lost: number } {
  if ("why" in loaded) throw new Error(loaded.why);
  const flat = loaded.native.hitCounts();
  const counts: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const key = answerKey(flat[i] as Buffer)!
      .split("\u0000")
      .join(" ");
    counts[key] = (counts[key] ?? 0) + (flat[i + 1] as number);
  }
  return { counts, lost: flat.at(-1) as number };
}

// The native thread answers repeats from its own cache without JavaScript seeing them; dnsAnalyticsAdaptiveGroups
// counts them from hitCounts(), read every few seconds (answering-process.ts): per cached answer, by its question.
test("the native cache's repeats are counted per question and rcode, flushed answers' hits kept, each read once", { skip }, async () => {
  if ("why" in loaded) return;
  const native = loaded.native;
  const port = native.listen("127.0.0.1", 0, () => {});
  try {
    const www = encodeQuery("www.hits.example", "A", { id: 1 });
    const gone = encodeQuery("gone.hits.example", "AAAA", { id: 2 });
    native.set(www, answerTo(www));
    native.set(gone, answerTo(gone, "NXDOMAIN"));
    // udpAsk asks again when no reply came within a second (a loaded machine): each repeat is a hit too, so the
    // counts are checked against the thread's own count of hits, and each at least what was asked.
    let hitsBefore = native.stats().hits;
    const hitsSince = () => {
      const now = native.stats().hits;
      const n = now - hitsBefore;
      hitsBefore = now;
      return n;
    };
    const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
    // Other ids, another case of the name (the table keyed by question), the same query again.
    for (const q of [encodeQuery("www.hits.example", "A"), encodeQuery("WWW.Hits.example", "A"), encodeQuery("www.hits.example", "A")])
      assert.equal(rcodeOf(packet.decode(await udpAsk(port, q))), 0);
    assert.equal(rcodeOf(packet.decode(await udpAsk(port, encodeQuery("gone.hits.example", "AAAA")))), 3);
    const first = readHits();
    assert.deepEqual(Object.keys(first.counts).sort(), ["gone.hits.example 28 3", "www.hits.example 1 0"]);
    assert.ok(first.counts["www.hits.example 1 0"] >= 3 && first.counts["gone.hits.example 28 3"] >= 1, JSON.stringify(first));
    assert.equal(total(first.counts), hitsSince(), "every hit counted once");
    assert.equal(first.lost, 0);
    assert.deepEqual(readHits(), { counts: {}, lost: 0 }, "read once");

    // A zone change flushes the cache: hits not yet read are kept, and so are those of an answer replaced.
    await udpAsk(port, encodeQuery("www.hits.example", "A"));
    await udpAsk(port, encodeQuery("gone.hits.example", "AAAA"));
    native.set(gone, answerTo(gone, "NXDOMAIN"));
    native.flush();
    const kept = readHits();
    assert.deepEqual(Object.keys(kept.counts).sort(), ["gone.hits.example 28 3", "www.hits.example 1 0"]);
    assert.equal(total(kept.counts), hitsSince(), "the flushed and the replaced answers' hits, once each");
    assert.equal(kept.lost, 0);
  } finally {
    native.stop();
  }
});
