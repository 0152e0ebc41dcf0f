import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createRecord, createZone, digAvailable, startDnsPlatform } from "../testing/helpers.js";
import { freePort, kdig, knotAvailable, startSecondaryKnot, until, type Knot } from "../testing/knot.js";

const Z = "ipv6-xfr.example";
const OTHER = "ipv6-other.example";
const EDGE_V4 = "192.0.2.45";
const EDGE_V6 = "2001:db8::45";

/** The records of an AXFR/IXFR as kdig prints them, one `name ttl class type data` line each (comments dropped). */
const records = (out: string) =>
  out
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith(";"))
    .map((l) => l.trim().split(/\s+/).join(" "));
const edgeAaaa = (lines: string[]) => lines.filter((l) => / AAAA 2001:db8::45$/.test(l));

/**
 * Zone transfers send what the server answers: with the zone's `ipv6` setting off, proxied names go without the
 * edge's AAAA (before, they were sent whatever the setting), and turning it off or on gives the zone a new serial and
 * a NOTIFY, so a secondary (Knot, by IXFR) follows. kdig reads the transfers.
 */
describe("zone transfers obey the zone's ipv6 setting", async () => {
  const tools = (await digAvailable) && (await knotAvailable);
  let p: TestPlatform;
  let port = 0;
  let knot: Knot | undefined;
  let knotPort = 0;
  let zoneId = "";
  let otherId = "";
  const serialAt = async (at: number, zone = Z) => Number((await kdig(at, [zone, "SOA", "+short"])).trim().split(/\s+/)[2]);
  const axfr = async () => {
    const out = await kdig(port, [Z, "AXFR"]);
    assert.match(out, /records/, out);
    return records(out);
  };
  const setIpv6 = async (value: "on" | "off", id = zoneId) => {
    const r = await p.api("PATCH", `/zones/${id}/settings/ipv6`, { value });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };

  before(async () => {
    if (!tools) return;
    knotPort = await freePort();
    ({ p, port } = await startDnsPlatform(["--edge-ipv4", EDGE_V4, "--edge-ipv6", EDGE_V6, "--notify", `127.0.0.1:${knotPort}`]));
    zoneId = await createZone(p, Z);
    otherId = await createZone(p, OTHER);
    for (const id of [zoneId, otherId]) {
      await createRecord(p, id, { type: "A", name: "www", content: "203.0.113.10", proxied: true });
      await createRecord(p, id, { type: "AAAA", name: "v6", content: "2001:db8:1::1", proxied: true });
      await createRecord(p, id, { type: "AAAA", name: "direct", content: "2001:db8:2::2", proxied: false });
    }
  });
  after(async () => {
    await knot?.stop();
    await p?.dispose();
  });

  it("on (the default): AXFR sends the edge's AAAA of proxied names; Knot loads them", async (t) => {
    if (!tools) return t.skip("knot or kdig not installed");
    const lines = await axfr();
    assert.deepEqual(edgeAaaa(lines).sort(), [`v6.${Z}. 300 IN AAAA ${EDGE_V6}`, `www.${Z}. 300 IN AAAA ${EDGE_V6}`]);
    knot = await startSecondaryKnot(knotPort, port, Z, { name: `www.${Z}`, type: "AAAA", answer: new RegExp(`^${EDGE_V6}\\s*$`) });
  });

  it("off: AXFR sends no edge AAAA (DNS-only AAAA stay), the serial moves once, IXFR removes them, and Knot follows", async (t) => {
    if (!tools || !knot) return t.skip("knot or kdig not installed");
    const k = knot;
    const before = await serialAt(port);
    const otherBefore = await serialAt(port, OTHER);
    await setIpv6("off");
    const after = await serialAt(port);
    assert.ok(after > before, `the serial moved when the API answered: ${before} → ${after}`);
    const lines = await axfr();
    assert.deepEqual(edgeAaaa(lines), [], "no edge AAAA in the transfer");
    assert.ok(
      lines.some((l) => l.startsWith(`direct.${Z}. `) && l.endsWith(" AAAA 2001:db8:2::2")),
      "a DNS-only AAAA is the zone's own data",
    );
    assert.ok(lines.includes(`www.${Z}. 300 IN A ${EDGE_V4}`), "the edge's IPv4 stays");
    // What the server answers and what it transfers agree.
    assert.equal((await kdig(port, [`www.${Z}`, "AAAA", "+short"])).trim(), "");
    // IXFR from the serial before: the two AAAA removed, nothing added but the SOA.
    const ixfr = records(await kdig(port, [Z, `IXFR=${before}`]));
    assert.deepEqual(edgeAaaa(ixfr).sort(), [`v6.${Z}. 300 IN AAAA ${EDGE_V6}`, `www.${Z}. 300 IN AAAA ${EDGE_V6}`], ixfr.join("\n"));
    assert.equal(ixfr.filter((l) => / SOA /.test(l)).length, 4, "current, old, new, current SOA: one incremental step");
    // The same value again changes nothing; another zone's serial never moved.
    await setIpv6("off");
    assert.equal(await serialAt(port), after, "off again: no new serial");
    assert.equal(await serialAt(port, OTHER), otherBefore);
    // Knot heard the NOTIFY and took the change.
    await until(async () => (await serialAt(k.port)) === after, "Knot to take the new serial");
    assert.equal((await kdig(k.port, [`www.${Z}`, "AAAA", "+short"])).trim(), "");
    assert.equal((await kdig(k.port, [`direct.${Z}`, "AAAA", "+short"])).trim(), "2001:db8:2::2");
    assert.equal((await kdig(k.port, [`www.${Z}`, "A", "+short"])).trim(), EDGE_V4);
    assert.match(k.log(), /IXFR, incoming.*finished/);
    assert.doesNotMatch(k.log(), /fallback to AXFR|XFR.*failed|refresh.*failed/);
  });

  it("on again: a new serial, the AAAA are back in AXFR and at Knot", async (t) => {
    if (!tools || !knot) return t.skip("knot or kdig not installed");
    const k = knot;
    const before = await serialAt(port);
    await setIpv6("on");
    const after = await serialAt(port);
    assert.ok(after > before);
    assert.equal(edgeAaaa(await axfr()).length, 2);
    await until(async () => (await kdig(k.port, [`www.${Z}`, "AAAA", "+short"])).trim() === EDGE_V6, "Knot to get the AAAA back");
    assert.equal(await serialAt(k.port), after);
  });
});
