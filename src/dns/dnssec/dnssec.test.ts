import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import * as packet from "dns-packet";
import { createRecord, createZone, dig, digAvailable, encodeQuery, rcodeOf, startDnsPlatform, tcpQuery, udpAsk } from "../testing/helpers.js";
import { dnskeyRdata, generateKey, keyTag } from "./keys.js";
import { askDo, delv, delvAvailable, writeTrustAnchor } from "../testing/dnssec.js";

const ZONE = "signed.example";
const VALID = /; fully validated/;
const NEGATIVE_VALID = /; negative response, fully validated/;

type Rrsig = { name: string; type: "RRSIG"; data: { typeCovered: string; keyTag: number } };
const rrsigsOf = (section: { type: string }[] = []) => section.filter((r) => r.type === "RRSIG") as unknown as Rrsig[];

describe("DNSSEC online signing, validated by delv from the zone's KSK", async () => {
  const haveDelv = await delvAvailable;
  let p: TestPlatform;
  let port: number;
  let zoneId: string;
  let anchor: string;
  const dir = mkdtempSync(join(tmpdir(), "dnssec-test-"));
  const validated = async (name: string, type: string, expect = VALID) => {
    const out = await delv(port, anchor, ZONE, name, type);
    assert.match(out, expect, `delv ${name} ${type}:\n${out}`);
    return out;
  };

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dnssec-rollover-wait", "0"]));
    zoneId = await createZone(p, ZONE);
    await createRecord(p, zoneId, { type: "A", name: "www", content: "203.0.113.5", ttl: 300 });
    await createRecord(p, zoneId, { type: "AAAA", name: "www", content: "2001:db8::5", ttl: 300 });
    await createRecord(p, zoneId, { type: "CNAME", name: "@", content: `www.${ZONE}` });
    await createRecord(p, zoneId, { type: "CNAME", name: "alias", content: `www.${ZONE}` });
    await createRecord(p, zoneId, { type: "CNAME", name: "dangling", content: `missing.${ZONE}` });
    await createRecord(p, zoneId, { type: "A", name: "edge", content: "203.0.113.9", proxied: true });
    await createRecord(p, zoneId, { type: "TXT", name: "*.wild", content: "wildcard" });
    await createRecord(p, zoneId, { type: "MX", name: "mail", content: `MX.${ZONE}`, priority: 10 });
    await createRecord(p, zoneId, { type: "NS", name: "sub", content: `ns.sub.${ZONE}` });
    await createRecord(p, zoneId, { type: "A", name: "ns.sub", content: "203.0.113.53" });
    const on = await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active" });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    anchor = await writeTrustAnchor(p, zoneId, join(dir, "anchor.conf"));
  });
  after(async () => {
    await p?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "validates a positive answer, a CNAME chain, a flattened apex, a proxied name and a wildcard",
    { skip: !haveDelv && "delv is not installed" },
    async () => {
      assert.match(await validated(`www.${ZONE}`, "A"), /203\.0\.113\.5/);
      assert.match(await validated(`www.${ZONE}`, "AAAA"), /2001:db8::5/);
      assert.match(await validated(`alias.${ZONE}`, "A"), /203\.0\.113\.5/);
      assert.match(await validated(ZONE, "A"), /signed\.example\.\s+\d+\s+IN\s+A\s+203\.0\.113\.5/);
      assert.match(await validated(`edge.${ZONE}`, "A"), /192\.0\.2\.10/);
      assert.match(await validated(`edge.${ZONE}`, "HTTPS"), /alpn/);
      assert.match(await validated(`anything.wild.${ZONE}`, "TXT"), /wildcard/);
      assert.match(await validated(`mail.${ZONE}`, "MX"), /mx\.signed\.example/i);
      await validated(ZONE, "DNSKEY");
      await validated(ZONE, "SOA");
      await validated(ZONE, "NS");
    },
  );

  it("proves NXDOMAIN and NODATA with compact NSEC answers that validate", { skip: !haveDelv && "delv is not installed" }, async () => {
    await validated(`nope.${ZONE}`, "A", NEGATIVE_VALID);
    await validated(`www.${ZONE}`, "TXT", NEGATIVE_VALID);
    await validated(`edge.${ZONE}`, "MX", NEGATIVE_VALID);
    await validated(`anything.wild.${ZONE}`, "A", NEGATIVE_VALID);
    // A CNAME whose target does not exist: the CNAME signed, the target denied.
    assert.match(await validated(`dangling.${ZONE}`, "A", /fully validated/), /CNAME\s+missing\.signed\.example/);
    // NODATA at the flattened apex: its NSEC must not call the apex an alias.
    await validated(ZONE, "TXT", NEGATIVE_VALID);
    // DS at an insecure delegation: the parent's NSEC proves there is none.
    await validated(`sub.${ZONE}`, "DS", NEGATIVE_VALID);
  });

  it("validates a record added after signing, without enabling again", { skip: !haveDelv && "delv is not installed" }, async () => {
    await createRecord(p, zoneId, { type: "TXT", name: "late", content: "added later" });
    assert.match(await validated(`late.${ZONE}`, "TXT"), /added later/);
  });

  it("signs only for queries with the DO bit: dig +dnssec shows RRSIGs, plain dig none, and NXDOMAIN stays NXDOMAIN without DO", async () => {
    const plain = await askDo(port, `www.${ZONE}`, "A", false);
    assert.equal(rrsigsOf(plain.answers).length, 0);
    assert.equal(((plain.additionals ?? []).find((a) => a.type === "OPT") as { flags?: number }).flags ?? 0, 0, "DO not echoed when not asked");
    const signed = await askDo(port, `www.${ZONE}`, "A", true);
    assert.equal(rrsigsOf(signed.answers).length, 1);
    assert.ok(((signed.additionals ?? []).find((a) => a.type === "OPT") as { flags?: number }).flags! & 0x8000, "DO echoed");
    const nxPlain = await askDo(port, `nope.${ZONE}`, "A", false);
    assert.equal(rcodeOf(nxPlain), 3, "NXDOMAIN without DO");
    assert.deepEqual(
      nxPlain.authorities?.map((a) => a.type),
      ["SOA"],
    );
    const nxSigned = await askDo(port, `nope.${ZONE}`, "A", true);
    assert.equal(rcodeOf(nxSigned), 0, "compact denial: NOERROR with an NSEC listing NXNAME");
    const nsec = nxSigned.authorities?.find((a) => a.type === "NSEC") as { name: string; data: { nextDomain: string; rrtypes: string[] } };
    assert.equal(nsec.name, `nope.${ZONE}`);
    assert.deepEqual(nsec.data.rrtypes.sort(), ["NSEC", "RRSIG", "UNKNOWN_128"]);
    if (await digAvailable) {
      assert.match(await dig(port, ["+dnssec", `www.${ZONE}`, "A"]), /\tRRSIG\tA 13 3 300 /);
      assert.doesNotMatch(await dig(port, [`www.${ZONE}`, "A"]), /RRSIG/);
    }
  });

  it("restores NXDOMAIN for queries with RFC 9824's CO bit (compact denial kept), echoes CO, and refuses a query for NXNAME", async () => {
    const ask = async (name: string, type: string, flags: number) =>
      packet.decode(
        await udpAsk(
          port,
          packet.encode({
            type: "query",
            id: 77,
            flags: packet.RECURSION_DESIRED,
            questions: [{ type: type as packet.RecordType, name, class: "IN" }],
            additionals: [{ type: "OPT", name: ".", udpPayloadSize: 4096, flags } as packet.Answer],
          }),
        ),
      );
    const optFlags = (r: ReturnType<typeof packet.decode>) => ((r.additionals ?? []).find((a) => a.type === "OPT") as { flags?: number }).flags ?? 0;
    const DO = 0x8000;
    const CO = 0x4000;
    const nx = await ask(`nope.${ZONE}`, "A", DO | CO);
    assert.equal(rcodeOf(nx), 3, "NXDOMAIN with CO");
    assert.equal(optFlags(nx) & (DO | CO), DO | CO, "DO and CO echoed");
    const nsec = nx.authorities?.find((a) => a.type === "NSEC") as { name: string; data: { rrtypes: string[] } };
    assert.equal(nsec.name, `nope.${ZONE}`);
    assert.ok(nsec.data.rrtypes.includes("UNKNOWN_128"), "the same compact NSEC, listing NXNAME");
    assert.ok(rrsigsOf(nx.authorities).some((r) => r.data.typeCovered === "NSEC"));
    assert.equal(rcodeOf(await ask(`nope.${ZONE}`, "A", DO)), 0, "NOERROR without CO, as before");
    const nodata = await ask(`www.${ZONE}`, "TXT", DO | CO);
    assert.equal(rcodeOf(nodata), 0, "a name that exists stays NOERROR (NODATA) with CO");
    assert.equal(rcodeOf(await ask(`www.${ZONE}`, "UNKNOWN_128", DO)), 1, "an explicit NXNAME query is FORMERR");
  });

  it("leaves the NS and glue of a delegation unsigned, and signs the DS the parent holds", async () => {
    const referral = await askDo(port, `host.sub.${ZONE}`, "A", true);
    assert.equal(referral.answers?.length, 0);
    assert.deepEqual(
      rrsigsOf(referral.authorities).map((r) => r.data.typeCovered),
      ["NSEC"],
      "only the NSEC proving there is no DS is signed, not the NS",
    );
    assert.equal(rrsigsOf(referral.additionals).length, 0, "glue is never signed");
    assert.ok(referral.additionals?.some((a) => a.type === "A" && a.name === `ns.sub.${ZONE}`));

    await createRecord(p, zoneId, {
      type: "DS",
      name: "sub",
      data: { key_tag: 12345, algorithm: 13, digest_type: 2, digest: "ab".repeat(32) },
    });
    const secure = await askDo(port, `host.sub.${ZONE}`, "A", true);
    assert.deepEqual(secure.authorities?.map((a) => a.type).sort(), ["DS", "NS", "RRSIG"]);
    assert.equal(rrsigsOf(secure.authorities)[0].data.typeCovered, "DS");
    if (haveDelv) assert.match(await validated(`sub.${ZONE}`, "DS"), /12345 13 2/);
  });

  it("truncates a signed answer past the client's EDNS size, and TCP carries it whole", async () => {
    for (let i = 0; i < 4; i++) await createRecord(p, zoneId, { type: "TXT", name: "big", content: `${i}${"x".repeat(200)}` });
    const udp = await askDo(port, `big.${ZONE}`, "TXT", true, 512);
    assert.ok((udp.flags ?? 0) & (1 << 9), "TC set");
    assert.equal(udp.answers?.length, 0);
    const [tcp] = await tcpQuery(port, encodeQuery(`big.${ZONE}`, "TXT", { edns: 512, dnssecOk: true }));
    assert.equal(tcp.answers?.filter((a) => a.type === "TXT").length, 4);
    assert.equal(rrsigsOf(tcp.answers).length, 1);
    if (await digAvailable) {
      const out = await dig(port, ["+dnssec", "+bufsize=512", `big.${ZONE}`, "TXT"]);
      assert.match(out, /Truncated, retrying in TCP mode/);
      assert.match(out, /RRSIG\tTXT 13 3/);
    }
    if (haveDelv) await validated(`big.${ZONE}`, "TXT");
  });

  /** What a resolver sees of the keys at one moment: the key tags of the DNSKEY set, and of the signatures on an answer and on the DNSKEY set. */
  const snapshot = async () => {
    const keys = await askDo(port, ZONE, "DNSKEY", true);
    const www = await askDo(port, `www.${ZONE}`, "A", true);
    const published = (keys.answers ?? [])
      .filter((a) => a.type === "DNSKEY")
      .map((a) => keyTag(dnskeyRdata((a.data as { flags: number }).flags, (a.data as { key: Buffer }).key)));
    return {
      published: new Set(published),
      answerSigners: new Set(rrsigsOf(www.answers).map((r) => r.data.keyTag)),
      keySigners: new Set(rrsigsOf(keys.answers).map((r) => r.data.keyTag)),
    };
  };
  type Snapshot = Awaited<ReturnType<typeof snapshot>>;
  const subset = (a: Set<number>, b: Set<number>) => [...a].every((x) => b.has(x));
  /**
   * No validation gap between two consecutive stages: a resolver holding the DNSKEY set of one validates the
   * signatures of the other, both ways (cached keys with new signatures, cached signatures with new keys).
   */
  const noGap = (before: Snapshot, after: Snapshot, step: string) => {
    assert.ok(subset(after.answerSigners, before.published), `${step}: new signatures made by a key resolvers already know`);
    assert.ok(subset(before.answerSigners, after.published), `${step}: signatures still cached validate with the new DNSKEY set`);
  };
  const rollover = async (key: "zsk" | "ksk") => {
    const r = await p.api("POST", `/zones/${zoneId}/dnssec/rollover`, { key });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result;
  };

  it("rolls the ZSK by pre-publication: every stage validates, with no gap between stages", async () => {
    const stages = [await snapshot()];
    assert.equal(stages[0].published.size, 2);
    const started = await rollover("zsk");
    assert.equal(started.rollover.stage, "publish");
    stages.push(await snapshot());
    assert.equal(stages[1].published.size, 3, "the new ZSK is published before it signs");
    assert.deepEqual(stages[1].answerSigners, stages[0].answerSigners, "the old ZSK still signs");
    if (haveDelv) await validated(`www.${ZONE}`, "A");
    assert.equal((await rollover("zsk")).rollover.stage, "retire");
    stages.push(await snapshot());
    assert.notDeepEqual(stages[2].answerSigners, stages[1].answerSigners, "the new ZSK signs");
    assert.equal(stages[2].published.size, 3, "the old ZSK stays published while its signatures may be cached");
    if (haveDelv) await validated(`www.${ZONE}`, "A");
    assert.equal((await rollover("zsk")).rollover, null);
    stages.push(await snapshot());
    assert.equal(stages[3].published.size, 2, "the old ZSK is gone");
    if (haveDelv) {
      await validated(`www.${ZONE}`, "A");
      await validated(`nope.${ZONE}`, "A", NEGATIVE_VALID);
    }
    for (let i = 1; i < stages.length; i++) noGap(stages[i - 1], stages[i], `stage ${i}`);
    assert.deepEqual(stages[3].keySigners, stages[0].keySigners, "the KSK is untouched");
  });

  it("rolls the KSK by double signature: both DS validate during the change, only the new one after", async () => {
    const oldAnchor = anchor;
    const started = await rollover("ksk");
    assert.equal(started.rollover.stage, "ds-change");
    assert.equal(started.ds_records.length, 2, "both DS records, for the registrar to hold during the change");
    const during = await snapshot();
    assert.equal(during.keySigners.size, 2, "the DNSKEY set is signed by both KSKs");
    const newAnchor = await writeTrustAnchor(p, zoneId, join(dir, "new-anchor.conf"));
    if (haveDelv) {
      assert.match(await delv(port, oldAnchor, ZONE, `www.${ZONE}`, "A"), VALID);
      assert.match(await delv(port, newAnchor, ZONE, `www.${ZONE}`, "A"), VALID);
    }
    assert.equal((await rollover("ksk")).ds_records.length, 1);
    if (haveDelv) {
      assert.match(await delv(port, newAnchor, ZONE, `www.${ZONE}`, "A"), VALID);
      assert.doesNotMatch(await delv(port, oldAnchor, ZONE, `www.${ZONE}`, "A"), VALID, "the old KSK no longer anchors the zone");
      // And a key the zone never had anchors nothing: delv does fail when it should.
      const stranger = generateKey("ksk");
      const strangerAnchor = join(dir, "stranger.conf");
      writeFileSync(strangerAnchor, `trust-anchors { "${ZONE}." static-key 257 3 13 "${stranger.public_key}"; };\n`);
      assert.doesNotMatch(await delv(port, strangerAnchor, ZONE, `www.${ZONE}`, "A"), VALID);
    }
  });
});
