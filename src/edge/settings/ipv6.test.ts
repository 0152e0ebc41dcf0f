import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { dig, startDnsPlatform } from "../../dns/testing/helpers.js";
import { createAccount } from "../../workers/testing/helpers.js";

const EDGE_V4 = "192.0.2.44";
const EDGE_V6 = "2001:db8::44";

/**
 * The zone setting `ipv6`: while it is off, DNS answers the zone's proxied names without the edge's IPv6 addresses
 * (no AAAA, no ipv6hint in the HTTPS record), asked with dig from many source ports so that every UDP answering
 * process (--dns-workers 2) and the TCP path answer; two accounts' zones, each by its own setting.
 */
describe("zone setting ipv6: AAAA of proxied names", () => {
  let p: TestPlatform;
  let port = 0;
  let zoneA = "";
  let zoneB = "";
  let tokenA = "";
  let tokenB = "";
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  /** The answer section's data of `name` `type`, asked `times` times over UDP (new source port each) and once over TCP: all must agree. */
  const answers = async (name: string, type: string, times = 6): Promise<string> => {
    const seen = new Set<string>();
    for (let i = 0; i < times; i++) seen.add((await dig(port, ["+short", name, type])).trim());
    seen.add((await dig(port, ["+tcp", "+short", name, type])).trim());
    assert.equal(seen.size, 1, `every answer of ${name} ${type} agrees: ${[...seen].join(" | ")}`);
    return [...seen][0];
  };
  const setIpv6 = async (zoneId: string, value: "on" | "off", token: string) => {
    const r = await p.api("PATCH", `/zones/${zoneId}/settings/ipv6`, { value }, as(token));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.result.value, value);
  };

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--edge-ipv4", EDGE_V4, "--edge-ipv6", EDGE_V6, "--dns-workers", "2"]));
    const accountB = await createAccount(p, "ipv6-b");
    zoneA = (await p.api("POST", "/zones", { name: "ipv6-a.example", account: { id: p.accountId } }, p.keyHeaders())).body.result.id;
    zoneB = (await p.api("POST", "/zones", { name: "ipv6-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    for (const zone of [zoneA, zoneB]) {
      for (const body of [
        { type: "A", name: "www", content: "203.0.113.10", proxied: true },
        { type: "AAAA", name: "v6", content: "2001:db8:1::1", proxied: true },
        { type: "AAAA", name: "direct", content: "2001:db8:2::2", proxied: false },
      ]) {
        const r = await p.api("POST", `/zones/${zone}/dns_records`, body, p.keyHeaders());
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
    }
    const token = async (accountId: string) =>
      (await p.api("POST", "/user/tokens", { name: "s", permissions: ["zone_settings_edit"], account_id: accountId }, p.keyHeaders())).body.result
        .value as string;
    tokenA = await token(p.accountId);
    tokenB = await token(accountB);
  });
  after(() => p?.dispose());

  it("on (the default): proxied names answer the edge's IPv6 addresses", async () => {
    assert.equal(await answers("www.ipv6-a.example", "AAAA"), EDGE_V6);
    assert.match(await answers("www.ipv6-a.example", "HTTPS"), /ipv6hint=2001:db8::44/);
  });

  it("off: no AAAA of the edge (NOERROR, empty) and no ipv6hint for that zone only; DNS-only AAAA stay; on again brings them back", async () => {
    await setIpv6(zoneA, "off", tokenA);
    assert.equal(await answers("www.ipv6-a.example", "AAAA"), "");
    assert.equal(await answers("v6.ipv6-a.example", "AAAA"), "", "a proxied AAAA record answers no edge IPv6 either");
    assert.equal(await answers("www.ipv6-a.example", "A"), EDGE_V4);
    assert.equal(await answers("v6.ipv6-a.example", "A"), EDGE_V4);
    const https = await answers("www.ipv6-a.example", "HTTPS");
    assert.match(https, /ipv4hint=192\.0\.2\.44/);
    assert.doesNotMatch(https, /ipv6hint/);
    const full = await dig(port, ["www.ipv6-a.example", "AAAA"]);
    assert.match(full, /status: NOERROR/);
    assert.equal(await answers("direct.ipv6-a.example", "AAAA"), "2001:db8:2::2", "a DNS-only record is the zone's own data");
    // The other account's zone keeps its IPv6.
    assert.equal(await answers("www.ipv6-b.example", "AAAA"), EDGE_V6);
    // B cannot turn A's back on; A can.
    const refused = await p.api("PATCH", `/zones/${zoneA}/settings/ipv6`, { value: "on" }, as(tokenB));
    assert.equal(refused.status, 404);
    assert.equal(await answers("www.ipv6-a.example", "AAAA"), "");
    await setIpv6(zoneA, "on", tokenA);
    assert.equal(await answers("www.ipv6-a.example", "AAAA"), EDGE_V6);
  });
});
