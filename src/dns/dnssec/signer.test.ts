import assert from "node:assert/strict";
import { verify } from "node:crypto";
import { describe, it } from "node:test";
import type { Rr } from "../nameserver/answer.js";
import { generateKey, signingKey } from "./keys.js";
import { labelCount, REFRESH_AFTER_MS, RrsetSigner } from "./signer.js";
import { nameWire, rrWire } from "./wire.js";

const zsk = signingKey("zsk", generateKey("zsk"));
const a = (data: string, ttl = 300, name = "www.example.test"): Rr => ({ name, type: "A", class: "IN", ttl, data });
type Sig = {
  typeCovered: string;
  labels: number;
  originalTTL: number;
  inception: number;
  expiration: number;
  keyTag: number;
  signersName: string;
  signature: Buffer;
};
const sigOf = (rr: Rr) => rr.data as Sig;

/** RFC 4034 §3.1.8.1 written out independently of the signer: what the signature must cover. */
function signedData(sig: Sig, rrs: Rr[]): Buffer {
  const head = Buffer.alloc(18);
  head.writeUInt16BE(1, 0);
  head[2] = 13;
  head[3] = sig.labels;
  head.writeUInt32BE(sig.originalTTL, 4);
  head.writeUInt32BE(sig.expiration, 8);
  head.writeUInt32BE(sig.inception, 12);
  head.writeUInt16BE(sig.keyTag, 16);
  const records = rrs
    .map((r) => rrWire({ ...r, name: r.name.toLowerCase() }))
    .sort((x, y) => Buffer.compare(x.subarray(x.length - 4), y.subarray(y.length - 4)));
  return Buffer.concat([head, nameWire(sig.signersName), ...records]);
}

describe("RrsetSigner", () => {
  it("signs an RRset in canonical order with ECDSA P-256 (r|s), valid from an hour ago for 14 days", () => {
    const now = Date.parse("2026-11-24T00:00:00Z");
    const signer = new RrsetSigner(() => now);
    const set = [a("192.0.2.9"), a("192.0.2.1")];
    const sig = sigOf(signer.sign("example.test", zsk, set));
    assert.equal(sig.typeCovered, "A");
    assert.equal(sig.labels, 3);
    assert.equal(sig.originalTTL, 300);
    assert.equal(sig.keyTag, zsk.tag);
    assert.equal(sig.signersName, "example.test");
    assert.equal(sig.inception, now / 1000 - 3600);
    assert.equal(sig.expiration, now / 1000 + 14 * 86400);
    assert.equal(sig.signature.length, 64);
    const ok = verify("sha256", signedData(sig, set), { key: zsk.privateKey, dsaEncoding: "ieee-p1363" }, sig.signature);
    assert.ok(ok, "the signature covers the RRset in canonical order");
    // The same set in another order is the same RRset: the cached signature.
    assert.deepEqual(sigOf(signer.sign("example.test", zsk, [set[1], set[0]])), sig);
  });

  it("reuses a signature until it is 7 days old, then makes a new one; sweep says when answer caches must be emptied", () => {
    let now = Date.parse("2026-11-24T00:00:00Z");
    const signer = new RrsetSigner(() => now);
    const first = sigOf(signer.sign("example.test", zsk, [a("192.0.2.1")]));
    assert.equal(signer.sweep(), false, "nothing is due");
    now += REFRESH_AFTER_MS - 1000;
    assert.deepEqual(sigOf(signer.sign("example.test", zsk, [a("192.0.2.1")])), first, "still fresh: reused");
    assert.equal(signer.sweep(), false);
    now += 1000;
    assert.equal(signer.sweep(), true, "a signature handed out is due: caches holding it must go");
    assert.equal(signer.sweep(), false, "and only once");
    const renewed = sigOf(signer.sign("example.test", zsk, [a("192.0.2.1")]));
    assert.ok(renewed.inception > first.inception);
    assert.ok(renewed.expiration - now / 1000 > 13 * 86400, "a fresh signature has its whole validity ahead");
  });

  it("signs a different TTL, owner or content separately, and counts a wildcard owner's labels without the *", () => {
    const signer = new RrsetSigner();
    const base = sigOf(signer.sign("example.test", zsk, [a("192.0.2.1")]));
    assert.notDeepEqual(sigOf(signer.sign("example.test", zsk, [a("192.0.2.1", 600)])).signature, base.signature);
    assert.notDeepEqual(sigOf(signer.sign("example.test", zsk, [a("192.0.2.2")])).signature, base.signature);
    assert.equal(labelCount("*.example.test"), 2);
    assert.equal(labelCount("example.test"), 2);
  });
});
