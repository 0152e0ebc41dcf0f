import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createRecord, createZone, dig, digAvailable, startDnsPlatform } from "../testing/helpers.js";
import { freePort, kdig, knotAvailable, startSecondaryKnot, until, type Knot } from "../testing/knot.js";
import { canonicalCompare, canonicalOrder } from "./zone-transfer.js";
import { delv, delvAvailable, writeTrustAnchor } from "../testing/dnssec.js";

const ZONE = "signedxfr.example";

describe("AXFR of a signed zone: Knot as the secondary serves a copy delv validates from our KSK", async () => {
  const tools = (await digAvailable) && (await knotAvailable) && (await delvAvailable);
  let p: TestPlatform;
  let port: number;
  let zoneId: string;
  let knot: Knot | undefined;
  let knotPort: number;
  let anchor: string;
  const dir = mkdtempSync(join(tmpdir(), "signed-xfr-"));

  before(async () => {
    if (!tools) return;
    knotPort = await freePort();
    ({ p, port } = await startDnsPlatform(["--notify", `127.0.0.1:${knotPort}`]));
    zoneId = await createZone(p, ZONE);
    await createRecord(p, zoneId, { type: "A", name: "www", content: "203.0.113.5", ttl: 300 });
    await createRecord(p, zoneId, { type: "TXT", name: "*.wild", content: "wildcard" });
    await createRecord(p, zoneId, { type: "MX", name: "@", content: `mail.${ZONE}`, priority: 10 });
    await createRecord(p, zoneId, { type: "A", name: "mail", content: "203.0.113.25" });
    await createRecord(p, zoneId, { type: "NS", name: "sub", content: `ns.sub.${ZONE}` });
    await createRecord(p, zoneId, { type: "A", name: "ns.sub", content: "203.0.113.53" });
    await createRecord(p, zoneId, { type: "NS", name: "secure", content: `ns.example.net` });
    await createRecord(p, zoneId, { type: "DS", name: "secure", data: { key_tag: 12345, algorithm: 13, digest_type: 2, digest: "ab".repeat(32) } });
    const on = await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active" });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    anchor = await writeTrustAnchor(p, zoneId, join(dir, "anchor.conf"));
  });
  after(async () => {
    await knot?.stop();
    await p?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("orders names canonically (RFC 4034 §6.1)", () => {
    const names = ["z.example", "example", "a.example", "yljkjljk.a.example", "*.z.example", "zabc.a.example", "z.a.example", "\u0001.z.example"];
    const mixed = [...names, "Ab.a.example", "a-b.a.example", "ab.A.example", "x.ab.a.example", "b.example", "_srv._tcp.example", "a.b.example"];
    assert.deepEqual(
      canonicalOrder(mixed).map((i) => mixed[i]),
      [...mixed].sort(canonicalCompare),
      "the sort by precomputed keys agrees with the comparison",
    );
    assert.deepEqual(names.sort(canonicalCompare), [
      "example",
      "a.example",
      "yljkjljk.a.example",
      "z.a.example",
      "zabc.a.example",
      "z.example",
      "\u0001.z.example",
      "*.z.example",
    ]);
  });

  it(
    "transfers DNSKEY, an NSEC chain and every RRSIG, but no signature on a delegation's NS or its glue",
    { skip: !tools && "knot, dig or delv not installed" },
    async () => {
      const axfr = (await dig(port, [ZONE, "AXFR"])).split("\n").filter((l) => l && !l.startsWith(";"));
      const of = (type: string) => axfr.filter((l) => l.split(/\s+/)[3] === type);
      assert.equal(of("DNSKEY").length, 2, "KSK and ZSK");
      const nsecOwners = of("NSEC").map((l) => l.split(/\s+/)[0]);
      assert.deepEqual(
        nsecOwners,
        [`${ZONE}.`, `mail.${ZONE}.`, `secure.${ZONE}.`, `sub.${ZONE}.`, `*.wild.${ZONE}.`, `www.${ZONE}.`],
        "canonical order, no glue",
      );
      assert.match(of("NSEC").at(-1)!, new RegExp(`NSEC\\s+${ZONE}\\. A RRSIG NSEC$`), "the chain closes at the apex");
      assert.match(
        of("NSEC").find((l) => l.startsWith(`sub.`))!,
        /NSEC\s+\*\.wild\.\S+ NS RRSIG NSEC$/,
      );
      const covered = of("RRSIG").map((l) => `${l.split(/\s+/)[0]} ${l.split(/\s+/)[4]}`);
      for (const c of [
        `${ZONE}. SOA`,
        `${ZONE}. NS`,
        `${ZONE}. DNSKEY`,
        `${ZONE}. MX`,
        `www.${ZONE}. A`,
        `*.wild.${ZONE}. TXT`,
        `secure.${ZONE}. DS`,
        `sub.${ZONE}. NSEC`,
      ])
        assert.ok(covered.includes(c), `RRSIG over ${c}: ${covered.join(", ")}`);
      for (const c of [`sub.${ZONE}. NS`, `secure.${ZONE}. NS`, `ns.sub.${ZONE}. A`]) assert.ok(!covered.includes(c), `no RRSIG over ${c}`);
    },
  );

  it("Knot serves the transferred signed zone, and delv validates its answers and denials", { skip: !tools && "knot, dig or delv not installed" }, async () => {
    knot = await startSecondaryKnot(knotPort, port, ZONE, { name: `www.${ZONE}`, type: "A", answer: /203\.0\.113\.5/ });
    const k = knot;
    assert.match(await kdig(knotPort, [`www.${ZONE}`, "A", "+dnssec"]), /RRSIG\s+A 13/, "Knot answers with our signatures");
    const validated = async (name: string, type: string, expect: RegExp) => {
      const out = await delv(knotPort, anchor, ZONE, name, type);
      assert.match(out, expect, `delv @knot ${name} ${type}:\n${out}`);
    };
    await validated(`www.${ZONE}`, "A", /; fully validated[\s\S]*203\.0\.113\.5/);
    await validated(`x.wild.${ZONE}`, "TXT", /; fully validated[\s\S]*"wildcard"/);
    await validated(ZONE, "MX", /; fully validated/);
    await validated(`nope.${ZONE}`, "A", /; negative response, fully validated/);
    await validated(`www.${ZONE}`, "TXT", /; negative response, fully validated/);
    await validated(ZONE, "DNSKEY", /; fully validated/);

    // A record added later: a new serial, NOTIFY, and Knot takes the zone again, signed (signed zones go whole).
    await createRecord(p, zoneId, { type: "A", name: "later", content: "203.0.113.77" });
    await until(async () => /203\.0\.113\.77/.test(await kdig(k.port, [`later.${ZONE}`, "A", "+short"])), "Knot to take the change");
    await validated(`later.${ZONE}`, "A", /; fully validated[\s\S]*203\.0\.113\.77/);
    await validated(`nope.${ZONE}`, "A", /; negative response, fully validated/);
  });
});
