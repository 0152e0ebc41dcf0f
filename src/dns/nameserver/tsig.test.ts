import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as packet from "dns-packet";
import { readTsig, refusalReply, sign, StreamSigner, StreamVerifier, TsigError, verifyRequest, verifyResponse, type TsigKey } from "./tsig.js";

const query = () => packet.encode({ type: "query", id: 4242, flags: 0, questions: [{ name: "example.com", type: "AXFR", class: "IN" }] } as packet.Packet);
const keyOf = (algorithm: string): TsigKey => ({ name: "xfr-key.example", algorithm, secret: randomBytes(32) });

describe("TSIG (RFC 8945) on wire bytes", () => {
  for (const algorithm of ["hmac-sha256", "hmac-sha512", "hmac-md5.sig-alg.reg.int"]) {
    it(`signs and verifies with ${algorithm}; dns-packet still reads the signed message`, () => {
      const key = keyOf(algorithm);
      const { message, mac } = sign(query(), key);
      const decoded = packet.decode(message);
      assert.equal(decoded.additionals?.at(-1)?.type, "TSIG");
      const v = verifyRequest(message, (n) => (n === key.name ? key : undefined));
      assert.equal(v.status, "ok");
      assert.deepEqual(v.status === "ok" && v.tsig.mac, mac);
    });
  }

  it("refuses a changed message (BADSIG), an unknown key or algorithm (BADKEY) and a stale time (BADTIME), in that order", () => {
    const key = keyOf("hmac-sha256");
    const keys = (n: string) => (n === key.name ? key : undefined);
    const { message } = sign(query(), key);
    const changed = Buffer.from(message);
    changed[2] ^= 1; // the RD flag
    assert.deepEqual(pick(verifyRequest(changed, keys)), ["refused", TsigError.BADSIG]);
    assert.deepEqual(pick(verifyRequest(message, () => undefined)), ["refused", TsigError.BADKEY]);
    assert.deepEqual(pick(verifyRequest(message, () => ({ ...key, algorithm: "hmac-sha512" }))), ["refused", TsigError.BADKEY]);
    assert.deepEqual(pick(verifyRequest(message, () => ({ ...key, secret: randomBytes(32) }))), ["refused", TsigError.BADSIG]);
    const stale = sign(query(), key, { time: Math.floor(Date.now() / 1000) - 301 }).message;
    assert.deepEqual(pick(verifyRequest(stale, keys)), ["refused", TsigError.BADTIME]);
    assert.equal(verifyRequest(query(), keys).status, "unsigned");
  });

  it("answers BADSIG with an unsigned TSIG and BADTIME with one signed by the key, carrying our time", () => {
    const key = keyOf("hmac-sha256");
    const stale = sign(query(), key, { time: Math.floor(Date.now() / 1000) - 3600 });
    const v = verifyRequest(stale.message, () => key);
    assert.equal(v.status, "refused");
    const reply = refusalReply(stale.message, v as Extract<typeof v, { status: "refused" }>);
    assert.equal(packet.decode(reply).flags! & 0xf, 9, "NOTAUTH");
    assert.equal(readTsig(reply)?.error, TsigError.BADTIME);
    assert.deepEqual(verifyResponse(reply, key, stale.mac, readTsig(reply)!.timeSigned), { ok: false, why: "TSIG error 18" });
    const badsig = verifyRequest(stale.message, () => ({ ...key, secret: randomBytes(32) }));
    const r2 = refusalReply(stale.message, badsig as Extract<typeof badsig, { status: "refused" }>);
    assert.equal(readTsig(r2)?.mac.length, 0);
  });

  it("signs each message of a stream over the MAC before it, so one message cannot be dropped, moved or replayed", () => {
    const key = keyOf("hmac-sha256");
    const request = sign(query(), key);
    const signer = new StreamSigner(key, request.mac);
    const messages = [1, 2, 3].map((n) =>
      signer.sign(
        packet.encode({ type: "response", id: 4242, flags: 0x8400, answers: [{ name: "example.com", type: "TXT", data: `part ${n}` }] } as packet.Packet),
      ),
    );
    // The first answers the request alone: checkable as a lone response.
    assert.deepEqual(verifyResponse(messages[0], key, request.mac), { ok: true });
    // The second is chained to the first's MAC: as a lone response to the request it does not verify.
    assert.deepEqual(verifyResponse(messages[1], key, request.mac), { ok: false, why: "bad signature" });
    assert.notDeepEqual(readTsig(messages[1])!.mac, readTsig(messages[2])!.mac);
  });

  it("throws on a TSIG record whose data is not the size it says (the server answers FORMERR)", () => {
    const { message } = sign(query(), keyOf("hmac-sha256"));
    const cut = Buffer.from(message.subarray(0, message.length - 3));
    assert.throws(() => readTsig(cut));
  });

  it("verifies a signed transfer stream as a secondary receives it, and refuses one signed otherwise, changed or unsigned", () => {
    const key = keyOf("hmac-sha256");
    const { message: request, mac } = sign(query(), key);
    const answers = [1, 2, 3].map((n) =>
      packet.encode({ type: "response", id: 4242, flags: 0, answers: [{ name: "example.com", type: "A", ttl: 60, data: `192.0.2.${n}` }] } as packet.Packet),
    );
    assert.equal(verifyRequest(request, () => key).status, "ok");
    const signer = new StreamSigner(key, mac);
    const stream = answers.map((m) => signer.sign(m));

    const ok = new StreamVerifier(key, mac);
    assert.equal(ok.complete(), false, "nothing verified yet");
    for (const m of stream) ok.verify(m);
    assert.equal(ok.complete(), true);

    assert.throws(() => new StreamVerifier({ ...key, secret: randomBytes(32) }, mac).verify(stream[0]), /bad signature/);
    assert.throws(() => new StreamVerifier(key, randomBytes(32)).verify(stream[0]), /bad signature/, "bound to our request's MAC");
    assert.throws(() => new StreamVerifier(key, mac).verify(answers[0]), /not signed/);
    const changed = new StreamVerifier(key, mac);
    changed.verify(stream[0]);
    const tampered = Buffer.from(stream[1]);
    tampered[tampered.indexOf(Buffer.from([192, 0, 2, 2]))] = 10;
    assert.throws(() => changed.verify(tampered), /bad signature/);
    const reordered = new StreamVerifier(key, mac);
    reordered.verify(stream[0]);
    assert.throws(() => reordered.verify(stream[2]), /bad signature/, "each message is chained to the one before");
  });
});

const pick = (v: ReturnType<typeof verifyRequest>) => [v.status, v.status === "refused" ? v.error : undefined];
