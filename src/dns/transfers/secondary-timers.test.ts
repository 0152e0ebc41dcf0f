import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TestPlatform } from "../../core/testing/platform.js";
import { rcodeOf, startDnsPlatform, udpQuery } from "../testing/helpers.js";
import { until } from "../testing/knot.js";
import { ScriptedPrimary } from "../testing/scripted-primary.js";

const Z = "timers.example";

/**
 * A primary whose SOA says refresh 0 (a misconfiguration, legal on the wire): the secondary waits the least it waits
 * (1 s) before its next refresh. It asked for the primary's SOA again at once, in a loop (hundreds of SOA queries a
 * second, each with a store write), until the timer's lower bound was applied to 0 too.
 */
describe("a secondary zone whose primary's SOA refresh is 0", () => {
  let p: TestPlatform;
  let port: number;
  let primary: ScriptedPrimary;

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    primary = new ScriptedPrimary(Z);
    await primary.start();
    primary.publish({ serial: 1, records: [{ name: Z, type: "NS", ttl: 300, class: "IN", data: `ns1.${Z}` }], timers: { refresh: 0, retry: 0 } });
  });
  after(async () => {
    await p?.dispose();
    await primary?.stop();
  });

  it("is refreshed again after 1 s, not at once", async () => {
    const peer = await p.api("POST", `/accounts/${p.accountId}/secondary_dns/peers`, { name: "scripted", ip: "127.0.0.1", port: primary.port });
    assert.equal(peer.status, 200, JSON.stringify(peer.body));
    const zoneId = (await p.api("POST", "/zones", { name: Z, type: "secondary", account: { id: p.accountId } })).body.result.id;
    const inc = await p.api("POST", `/zones/${zoneId}/secondary_dns/incoming`, { peers: [peer.body.result.id] });
    assert.equal(inc.status, 200, JSON.stringify(inc.body));
    await until(async () => rcodeOf(await udpQuery(port, Z, "SOA")) === 0, "the first transfer");
    // next_refresh_time is set when a refresh ends, from the same clock and after its checked_time (null while one runs).
    let view: { checked_time: string; next_refresh_time: string | null } | undefined;
    await until(async () => {
      view = (await p.api("GET", `/zones/${zoneId}/secondary_dns/incoming`)).body.result;
      return !!view?.next_refresh_time;
    }, "a view between two refreshes");
    const wait = Date.parse(view!.next_refresh_time!) - Date.parse(view!.checked_time);
    assert.ok(wait >= 1000, `the next refresh ${wait} ms after the last, not at once (${JSON.stringify(view)})`);
  });
});
