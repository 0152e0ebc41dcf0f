import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { rcodeOf, startDnsPlatform, udpQuery } from "../testing/helpers.js";
import { until } from "../testing/knot.js";
import { ScriptedPrimary, type PrimaryVersion } from "../testing/scripted-primary.js";

const Z = "stream.example";
const HOSTS = 3000;

const a = (name: string, address: string): packet.Answer => ({ name: `${name}.${Z}`, type: "A", ttl: 300, class: "IN", data: address });
const version = (serial: number, names: string[], address: (name: string) => string): PrimaryVersion => ({
  serial,
  records: [{ name: Z, type: "NS", ttl: 300, class: "IN", data: `ns1.${Z}` }, a("ns1", "192.0.2.53"), ...names.map((n) => a(n, address(n)))],
});
const hosts = (from: number, to: number, prefix = "h") => Array.from({ length: to - from }, (_, i) => `${prefix}${from + i}`);

/**
 * Transfers of many messages (50 records each) into a secondary zone, taken in message by message as they arrive
 * (incoming-transfer.ts): applied whole once the answer is complete, and not at all when the primary breaks the answer
 * in its last message (connection closed, or SERVFAIL): the zone keeps serving its previous version and serial.
 */
describe("a secondary zone fed a transfer of many messages", () => {
  let p: TestPlatform;
  let port: number;
  let primary: ScriptedPrimary;
  let zoneId: string;

  const serial = async () => ((await udpQuery(port, Z, "SOA")).answers?.[0] as { data: packet.SoaData }).data.serial;
  const address = async (name: string) => {
    const r = await udpQuery(port, `${name}.${Z}`, "A");
    return rcodeOf(r) === 3 ? "NXDOMAIN" : String((r.answers?.[0] as { data?: unknown } | undefined)?.data);
  };
  const total = async () => (await p.api("GET", `/zones/${zoneId}/dns_records?per_page=1`)).body.result_info.total_count as number;
  const idOf = async (name: string) => (await p.api("GET", `/zones/${zoneId}/dns_records?name=${name}.${Z}`)).body.result[0].id as string;
  const lastError = async () => (await p.api("GET", `/zones/${zoneId}/secondary_dns/incoming`)).body.result.last_error as string | null;
  /** The zone as served: its serial, a record from the first message, one from the last, and how many records it has. */
  const served = async () => [await serial(), await address("h0"), await address(`h${HOSTS - 1}`), await total()];

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    primary = new ScriptedPrimary(Z);
    await primary.start();
    primary.publish(version(1, hosts(0, HOSTS), () => "192.0.2.1"));
  });
  after(async () => {
    await p?.dispose();
    await primary?.stop();
  });

  it("takes in a first AXFR of many messages whole", async () => {
    const peer = await p.api("POST", `/accounts/${p.accountId}/secondary_dns/peers`, {
      name: "scripted",
      ip: "127.0.0.1",
      port: primary.port,
      ixfr_enable: true,
    });
    assert.equal(peer.status, 200, JSON.stringify(peer.body));
    zoneId = (await p.api("POST", "/zones", { name: Z, type: "secondary", account: { id: p.accountId } })).body.result.id;
    const inc = await p.api("POST", `/zones/${zoneId}/secondary_dns/incoming`, { peers: [peer.body.result.id] });
    assert.equal(inc.status, 200, JSON.stringify(inc.body));
    await until(async () => rcodeOf(await udpQuery(port, Z, "SOA")) === 0, "the first transfer");
    assert.deepEqual(await served(), [1, "192.0.2.1", "192.0.2.1", HOSTS + 2]);
  });

  for (const breakage of ["close-before-last", "servfail-in-last"] as const) {
    it(`keeps the zone and its serial when the primary breaks an AXFR in its last message (${breakage})`, async () => {
      // Version 2 (h0..h999 at another address), first offered broken.
      if (breakage === "close-before-last") primary.publish(version(2, hosts(0, HOSTS), (n) => (Number(n.slice(1)) < 1000 ? "192.0.2.2" : "192.0.2.1")));
      primary.breakNext(breakage);
      const forced = await p.api("POST", `/zones/${zoneId}/secondary_dns/force_axfr`);
      assert.equal(forced.status, 502, JSON.stringify(forced.body));
      assert.match(forced.body.errors[0].message, breakage === "servfail-in-last" ? /SERVFAIL/ : /closed the connection/);
      assert.deepEqual(await served(), [1, "192.0.2.1", "192.0.2.1", HOSTS + 2], "the previous version, whole");
      assert.match((await lastError()) ?? "", /scripted/);
    });
  }

  it("takes the next whole AXFR, keeping the ids of the records that stay", async () => {
    const kept = await idOf(`h${HOSTS - 1}`);
    const changed = await idOf("h0");
    const forced = await p.api("POST", `/zones/${zoneId}/secondary_dns/force_axfr`);
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.deepEqual(await served(), [2, "192.0.2.2", "192.0.2.1", HOSTS + 2]);
    assert.equal(await idOf(`h${HOSTS - 1}`), kept);
    assert.notEqual(await idOf("h0"), changed, "a record whose value changed is another record");
    assert.equal(await lastError(), null);
  });

  it("applies IXFR differences of many messages whole, and none of a broken one", async () => {
    // Version 3: h1000..h1999 removed, n0..n999 added: 2,000 differences over 40 messages.
    const v3names = [...hosts(0, 1000), ...hosts(2000, HOSTS), ...hosts(0, 1000, "n")];
    primary.publish(version(3, v3names, (n) => (n.startsWith("h") && Number(n.slice(1)) < 1000 ? "192.0.2.2" : "192.0.2.1")));
    await primary.notify(port);
    await until(async () => (await serial()) === 3, "the IXFR");
    assert.equal(primary.served.at(-1), "IXFR");
    // The log reaches us through the server's stdout, maybe after the answers: waited for, not read once.
    await until(async () => /"how":"IXFR from scripted"/.test(p.logs()), "the IXFR's log line");
    assert.deepEqual(await served(), [3, "192.0.2.2", "192.0.2.1", HOSTS + 2]);
    assert.equal(await address("h1500"), "NXDOMAIN");
    assert.equal(await address("n999"), "192.0.2.1");

    // Version 4: n0..n999 gone again; the IXFR breaks in its last message.
    primary.publish(
      version(
        4,
        v3names.filter((n) => !n.startsWith("n")),
        () => "192.0.2.4",
      ),
    );
    primary.breakNext("close-before-last");
    await primary.notify(port);
    await until(async () => /closed the connection/.test((await lastError()) ?? ""), "the broken IXFR");
    assert.equal(primary.served.at(-1), "IXFR");
    assert.deepEqual(await served(), [3, "192.0.2.2", "192.0.2.1", HOSTS + 2]);
    assert.equal(await address("n0"), "192.0.2.1");
  });
});
