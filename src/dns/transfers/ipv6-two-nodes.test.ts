import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { startTwoNodes } from "../../core/testing/two-nodes.js";
import { kdig, knotAvailable } from "../testing/knot.js";

const EDGE_V6 = "2001:db8::46";

/**
 * On two nodes (one PostgreSQL): `ipv6` turned off through one node moves the zone's serial once for the cluster (by
 * the node it was changed on, not once per node), and both nodes then transfer the zone without the edge's AAAA.
 */
test("on two nodes (PostgreSQL) an ipv6 change moves the serial once, and both nodes' transfers follow it", { timeout: 300_000 }, async (t) => {
  if (!(await knotAvailable)) return t.skip("kdig not installed");
  const nodes = await startTwoNodes(t, ["--edge-ipv4", "192.0.2.46", "--edge-ipv6", EDGE_V6]);
  if (!nodes) return;
  const [a, b] = nodes;
  const dnsPort = (n: typeof a) => Number(n.endpoints.dns_udp.split(":").pop());
  const zone = `xfr6${randomBytes(4).toString("hex")}.example`;
  const zoneId = (await a.api("POST", "/zones", { name: zone, account: { id: a.accountId } })).body.result.id as string;
  assert.equal((await a.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: "203.0.113.10", proxied: true })).status, 200);
  const serial = async (n: typeof a) => Number((await kdig(dnsPort(n), [zone, "SOA", "+short"])).trim().split(/\s+/)[2]);
  const edgeAaaa = async (n: typeof a) => {
    const out = await kdig(dnsPort(n), [zone, "AXFR"]);
    assert.match(out, /records/, out);
    return out.split("\n").filter((l) => /\sAAAA\s+2001:db8::46$/.test(l.trim())).length;
  };
  await eventually(async () => (await serial(b)) === (await serial(a)) && (await edgeAaaa(b)) === 1, "the other node holds the zone", 60_000);
  const before = await serial(a);

  const r = await a.api("PATCH", `/zones/${zoneId}/settings/ipv6`, { value: "off" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // The node's name servers take the change from its notice, after the API answered: on a busy machine, later.
  await eventually(async () => (await serial(a)) > before, `the serial moved from ${before}`, 60_000);
  const after = await serial(a);
  assert.equal(await edgeAaaa(a), 0);
  await eventually(async () => (await edgeAaaa(b)) === 0 && (await serial(b)) === after, "the other node transfers the zone without the AAAA", 60_000);
  // Had the other node moved the serial too (once per node), it would be past `after` by now, on both.
  assert.equal(await serial(b), after);
  assert.equal(await serial(a), after);
});
