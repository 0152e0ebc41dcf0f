import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createRecord, createZone, dig, startDnsPlatform, tcpQuery } from "../testing/helpers.js";
import { askDo, delv, delvAvailable, writeTrustAnchor } from "./testing.js";
import * as packet from "dns-packet";

const ZONE = "signed.example";
const VALID = /; fully validated/;
const NEGATIVE_VALID = /; negative response, fully validated/;

const rrsigsOf = (section: { type: string }[] = []) => section.filter((r) => r.type === "RRSIG");

describe("DNSSEC online signing, validated by delv from the zone's KSK", { skip: process.env.EDGE_TEST_REQUIRE_SERVICES ? false : undefined }, async () => {
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
    await createRecord(p, zoneId, { type: "A", name: "edge", content: "203.0.113.9", proxied: true });
    await createRecord(p, zoneId, { type: "TXT", name: "*.wild", content: "wildcard" });
    await createRecord(p, zoneId, { type: "MX", name: "mail", content: `MX.${ZONE}`, priority: 10 });
    await createRecord(p, zoneId, { type: "NS", name: "sub", content: `ns.sub.${ZONE}` });
    await createRecord(p, zoneId, { type: "A", name: "ns.sub", content: "203.0.113.53" });
    const on = await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active" });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    anchor = await writeTrustAnchor(p, zoneId, dir);
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
    await validated(`alias-to-nothing.${ZONE}`, "A", NEGATIVE_VALID);
    // DS at an insecure delegation: the parent's NSEC proves there is none.
    await validated(`sub.${ZONE}`, "DS", NEGATIVE_VALID);
  });

  it("validates a record added after signing, without enabling again", { skip: !haveDelv && "delv is not installed" }, async () => {
    await createRecord(p, zoneId, { type: "TXT", name: "late", content: "added later" });
    assert.match(await validated(`late.${ZONE}`, "TXT"), /added later/);
  });
});
