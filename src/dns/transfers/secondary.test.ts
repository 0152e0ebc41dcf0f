import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startTcpProxy } from "../../core/testing/tcp-proxy.js";
import { dig, digAvailable, rcodeOf, startDnsPlatform, udpQuery } from "../testing/helpers.js";
import { freePort, kdig, knotAvailable, knsupdate, primaryForPlatform, startKnot, until, type Knot } from "../testing/knot.js";
import { readTsig, sign } from "../nameserver/tsig.js";

const SEC = "sec.example";
const TIMER = "timer.example";
const secret = () => randomBytes(32).toString("base64");

/** The primary's zone: a bit of everything a secondary must serve, and a HINFO it does not keep. */
const secZone = `$ORIGIN ${SEC}.
$TTL 600
@ SOA ns1.${SEC}. hostmaster.${SEC}. 2026112401 3600 600 86400 300
@ NS ns1.${SEC}.
@ NS ns2.${SEC}.
ns1 A 192.0.2.53
ns2 A 192.0.2.54
www A 192.0.2.80
www AAAA 2001:db8::80
@ MX 10 mail.${SEC}.
mail A 192.0.2.25
txt TXT "hello world" "two"
_sip._tcp SRV 10 5 5060 sip.${SEC}.
alias CNAME www.${SEC}.
sub NS ns.sub.${SEC}.
ns.sub A 192.0.2.99
*.wild A 192.0.2.77
@ CAA 0 issue "letsencrypt.org"
info HINFO "PC" "Linux"
`;
/** Refreshed by timer only (Knot sends it no NOTIFY), and expiring fast once the primary is gone. */
const timerZone = `$ORIGIN ${TIMER}.
$TTL 300
@ SOA ns1.${TIMER}. hostmaster.${TIMER}. 1 1 1 10 60
@ NS ns1.${TIMER}.
ns1 A 192.0.2.53
www A 192.0.2.81
`;

/** A NOTIFY for `zone` sent from `localAddress`, optionally signed; its answer. */
function sendNotify(port: number, zone: string, opts: { localAddress?: string; key?: { name: string; secret: string } } = {}): Promise<Buffer> {
  const query = packet.encode({
    id: 4242,
    type: "query",
    flags: (4 << 11) | (1 << 10),
    questions: [{ name: zone, type: "SOA", class: "IN" }],
  } as packet.Packet);
  const msg = opts.key ? sign(query, { name: opts.key.name, algorithm: "hmac-sha256", secret: Buffer.from(opts.key.secret, "base64") }).message : query;
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket("udp4");
    const timer = setTimeout(() => {
      s.close();
      reject(new Error("no answer to NOTIFY"));
    }, 5000);
    s.on("message", (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m);
    });
    s.bind(0, opts.localAddress ?? "127.0.0.1", () => s.send(msg, port, "127.0.0.1"));
  });
}

describe("the platform as a secondary, with Knot as the primary", async () => {
  const tools = (await digAvailable) && (await knotAvailable);
  let p: TestPlatform;
  let port: number;
  let knot: Knot | undefined;
  let knotPort: number;
  let tsigSecret: string;
  let tsigId: string;
  let peerId: string;
  let secId: string;
  let timerId: string;
  const A = () => `/accounts/${p.accountId}/secondary_dns`;
  const notifies = () => (p.logs().match(/NOTIFY from a primary; refreshing/g) ?? []).length;
  const forcedAxfrs = () => (p.logs().match(/force_axfr: refreshing the zone by AXFR/g) ?? []).length;
  /** A log (the platform's, Knot's) reaches us on its own pipe, possibly after answers to what came later: wait for a line. */
  const logged = (line: RegExp, what: string, log = () => p.logs()) => until(async () => line.test(log()), what);
  const incoming = async () => (await p.api("GET", `/zones/${secId}/secondary_dns/incoming`)).body.result;
  /**
   * Waits for the refresh a step set off to be over, not merely begun (a NOTIFY counted, records served): the end of
   * a refresh that reached a primary sets checked_time, `before` is its value from before that step. The next test
   * then starts with no refresh running, one begun under settings it is about to change.
   */
  const refreshOver = (before: string | null, what: string) => until(async () => (await incoming()).checked_time !== before, what);
  const answers = async (name: string, type: string) => (await dig(port, [name, type, "+short"])).trim();
  const status = async (name: string) => /status: (\w+)/.exec(await dig(port, [name, "SOA"]))?.[1];

  before(async () => {
    if (!tools) return;
    ({ p, port } = await startDnsPlatform());
    knotPort = await freePort();
    tsigSecret = secret();
    knot = await startKnot(
      knotPort,
      primaryForPlatform(tsigSecret, port, [
        { domain: SEC, notify: true },
        { domain: TIMER, notify: false },
      ]),
      { [`${SEC}.zone`]: secZone, [`${TIMER}.zone`]: timerZone },
    );
  });
  after(async () => {
    await knot?.stop();
    await p?.dispose();
  });

  it("creates secondary zones, answers SERVFAIL until the first transfer, and refuses incoming transfers on a full zone", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const created = await p.api("POST", "/zones", { name: SEC, type: "secondary", account: { id: p.accountId } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.result.type, "secondary");
    secId = created.body.result.id;
    timerId = (await p.api("POST", "/zones", { name: TIMER, type: "secondary", account: { id: p.accountId } })).body.result.id;
    assert.equal(await status(`www.${SEC}`), "SERVFAIL", "nothing to serve before the first transfer");
    const missing = await p.api("GET", `/zones/${secId}/secondary_dns/incoming`);
    assert.equal(missing.status, 404);

    const full = (await p.api("POST", "/zones", { name: "full.example", account: { id: p.accountId } })).body.result.id;
    const refused = await p.api("POST", `/zones/${full}/secondary_dns/incoming`, { peers: [] });
    assert.equal(refused.status, 400);
    assert.match(refused.body.errors[0].message, /secondary zones/);

    const tsig = await p.api("POST", `${A()}/tsigs`, { name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
    tsigId = tsig.body.result.id;
    const peer = await p.api("POST", `${A()}/peers`, { name: "knot", ip: "127.0.0.1", port: knotPort, tsig_id: tsigId, ixfr_enable: true });
    peerId = peer.body.result.id;
    const unknown = await p.api("POST", `/zones/${secId}/secondary_dns/incoming`, { peers: ["0".repeat(32)] });
    assert.equal(unknown.status, 400, "only peers of the zone's account");
  });

  it("pulls the zone from Knot over a TSIG-signed AXFR and serves it like any zone", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const inc = await p.api("POST", `/zones/${secId}/secondary_dns/incoming`, { name: `${SEC}.`, peers: [peerId], auto_refresh_seconds: 3600 });
    assert.equal(inc.status, 200, JSON.stringify(inc.body));
    assert.equal(inc.body.result.auto_refresh_seconds, 3600);
    await until(async () => (await answers(`www.${SEC}`, "A")) === "192.0.2.80", "the first transfer");
    await refreshOver(null, "the first refresh to be over");
    await logged(/"how":"AXFR from knot"/, "the AXFR in the log");
    await logged(/AXFR, outgoing/, "the AXFR in Knot's log", () => knot!.log());

    // Served as the primary has it: its SOA and NS, delegations, wildcards, CNAMEs, TXT strings.
    assert.equal(await answers(SEC, "SOA"), (await kdig(knotPort, [SEC, "SOA", "+short"])).trim());
    assert.deepEqual((await answers(SEC, "NS")).split("\n").sort(), [`ns1.${SEC}.`, `ns2.${SEC}.`]);
    assert.equal(await answers(`www.${SEC}`, "AAAA"), "2001:db8::80");
    assert.equal(await answers(`txt.${SEC}`, "TXT"), '"hello world" "two"');
    assert.equal(await answers(`x.wild.${SEC}`, "A"), "192.0.2.77");
    assert.equal(await answers(`alias.${SEC}`, "A"), `www.${SEC}.\n192.0.2.80`);
    assert.equal(await answers(`_sip._tcp.${SEC}`, "SRV"), `10 5 5060 sip.${SEC}.`);
    assert.equal(await answers(SEC, "CAA"), '0 issue "letsencrypt.org"');
    const referral = await dig(port, [`host.sub.${SEC}`, "A"]);
    assert.match(referral, new RegExp(`AUTHORITY SECTION:\\n${`sub.${SEC}`.replace(/\./g, "\\.")}\\.\\s+600\\s+IN\\s+NS\\s+ns\\.sub`));
    assert.match(referral, /192\.0\.2\.99/, "glue");
    assert.equal(await status(`nope.${SEC}`), "NXDOMAIN");

    // The records API reads it, and refuses to write it.
    const records = (await p.api("GET", `/zones/${secId}/dns_records?per_page=100`)).body.result as { type: string; name: string }[];
    assert.ok(records.some((r) => r.type === "A" && r.name === `www.${SEC}`));
    assert.ok(!records.some((r) => (r.type as string) === "HINFO"), "a type the platform does not store is left out");
    const write = await p.api("POST", `/zones/${secId}/dns_records`, { type: "A", name: "new", content: "192.0.2.1" });
    assert.equal(write.status, 400);
    assert.equal(write.body.errors[0].code, 1095);
    assert.match(write.body.errors[0].message, /secondary zone/);
    const del = await p.api("DELETE", `/zones/${secId}/dns_records/${(records[0] as unknown as { id: string }).id}`);
    assert.equal(del.status, 400);
    const soa = await p.api("PATCH", `/zones/${secId}/dns_settings`, { soa: { refresh: 7200 } });
    assert.equal(soa.status, 400);
    const dnssec = await p.api("PATCH", `/zones/${secId}/dnssec`, { status: "active" });
    assert.equal(dnssec.status, 400);

    const view = (await p.api("GET", `/zones/${secId}/secondary_dns/incoming`)).body.result;
    assert.equal(view.soa_serial, 2026112401);
    assert.deepEqual(view.peers, [peerId]);
    assert.ok(view.checked_time && view.last_transferred_time);
    assert.equal(view.last_error, null);
    assert.equal(view.skipped_records, 1, "the HINFO");
    const peerDelete = await p.api("DELETE", `${A()}/peers/${peerId}`);
    assert.equal(peerDelete.status, 400, "a peer a secondary zone uses cannot be deleted");
  });

  it("takes a change on Knot on its NOTIFY, by IXFR", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const before = notifies();
    const checked = (await incoming()).checked_time;
    await knsupdate(knotPort, `hmac-sha256:xfr-key:${tsigSecret}`, SEC, [
      `update add after.${SEC}. 300 TXT "changed on knot"`,
      `update delete www.${SEC}. AAAA`,
    ]);
    await until(async () => (await answers(`after.${SEC}`, "TXT")) === '"changed on knot"', "the change to arrive");
    await refreshOver(checked, "the refresh that brought it to be over");
    await until(async () => notifies() > before, "Knot's signed NOTIFY to have started the refresh");
    assert.equal(await answers(`www.${SEC}`, "AAAA"), "", "the removal too");
    await logged(/"how":"IXFR from knot"/, "the IXFR in the log");
    await logged(/IXFR, outgoing/, "the IXFR in Knot's log", () => knot!.log());
    assert.equal((await p.api("GET", `/zones/${secId}/secondary_dns/incoming`)).body.result.soa_serial, 2026112402);
  });

  it("ignores an unsigned NOTIFY, a wrongly signed one, and one from an address that is not a primary", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const before = notifies();
    const unsigned = packet.decode(await sendNotify(port, SEC));
    assert.equal(rcodeOf(unsigned), 5, "REFUSED: the primary has a key and this is unsigned");
    const wrong = await sendNotify(port, SEC, { key: { name: "xfr-key", secret: secret() } });
    assert.equal(rcodeOf(packet.decode(wrong)), 9, "NOTAUTH");
    assert.equal(readTsig(wrong)?.error, 16, "BADSIG");
    const elsewhere = packet.decode(await sendNotify(port, SEC, { localAddress: "127.0.0.2", key: { name: "xfr-key", secret: tsigSecret } }));
    assert.equal(rcodeOf(elsewhere), 5, "REFUSED from an address that is not a peer, however signed");
    const checked = (await incoming()).checked_time;
    const good = await sendNotify(port, SEC, { key: { name: "xfr-key", secret: tsigSecret } });
    assert.equal(rcodeOf(packet.decode(good)), 0);
    assert.ok(readTsig(good)?.mac.length, "the acknowledgement is signed");
    await refreshOver(checked, "the refresh the good NOTIFY set off to be over");
    await until(async () => notifies() > before, "the good NOTIFY in the log");
    assert.equal(notifies(), before + 1, "only the signed NOTIFY from the primary's address");
  });

  it("force_axfr during a refresh begun under the old TSIG key reports a refresh under the new key", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    // Knot behind a proxy that keeps its answers back on cue: a refresh is at Knot, signed with the right key and
    // answered, when the key changes and force_axfr is asked for. What force_axfr reports must be the outcome of a
    // refresh signed with the new key (refused), not that of the one running (which succeeds).
    const proxy = await startTcpProxy(`tcp://127.0.0.1:${knotPort}`);
    const held = await p.api("POST", `${A()}/peers`, { name: "knot-held", ip: "127.0.0.1", port: proxy.port, tsig_id: tsigId, ixfr_enable: true });
    assert.equal(held.status, 200, JSON.stringify(held.body));
    const hold = proxy.hold();
    try {
      // A change of primaries refreshes the zone (from the proxy): its SOA query reaches Knot; the answer is kept back.
      const moved = await p.api("PUT", `/zones/${secId}/secondary_dns/incoming`, { peers: [held.body.result.id] });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      await until(async () => hold.keptBytes() > 0, "Knot's answer to the refresh to be held");
      const put = await p.api("PUT", `${A()}/tsigs/${tsigId}`, { name: "xfr-key.", algo: "hmac-sha256.", secret: secret() });
      assert.equal(put.status, 200);
      const asked = forcedAxfrs();
      const forcing = p.api("POST", `/zones/${secId}/secondary_dns/force_axfr`);
      // The platform logs this right before it asks for the refresh, with nothing awaited between: the running
      // refresh cannot have taken Knot's answer (not sent yet) before force_axfr found it running.
      await until(async () => forcedAxfrs() > asked, "the platform to take the force_axfr");
      hold.release();
      const forced = await forcing;
      assert.equal(forced.status, 502, JSON.stringify(forced.body));
      assert.match(forced.body.errors[0].message, /knot-held.*(NOTAUTH|TSIG)/);
      assert.match((await incoming()).last_error, /NOTAUTH|TSIG/);
      assert.equal(await answers(`www.${SEC}`, "A"), "192.0.2.80", "the zone keeps what it held");
    } finally {
      // Back as it was, whatever failed above: the tests after this one use the key and the primary.
      hold.release();
      await p.api("PUT", `${A()}/tsigs/${tsigId}`, { name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
      const checked = (await incoming()).checked_time;
      await p.api("PUT", `/zones/${secId}/secondary_dns/incoming`, { peers: [peerId] });
      await refreshOver(checked, "the refresh from Knot itself to be over");
      await p.api("DELETE", `${A()}/peers/${held.body.result.id}`);
      await proxy.close();
    }
  });

  it("refuses a transfer signed with the wrong key and keeps what the zone held", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const put = await p.api("PUT", `${A()}/tsigs/${tsigId}`, { name: "xfr-key.", algo: "hmac-sha256.", secret: secret() });
    assert.equal(put.status, 200);
    try {
      const forced = await p.api("POST", `/zones/${secId}/secondary_dns/force_axfr`);
      assert.equal(forced.status, 502);
      assert.match(forced.body.errors[0].message, /NOTAUTH|TSIG/);
      assert.equal(await answers(`www.${SEC}`, "A"), "192.0.2.80", "the old data is kept");
      assert.match((await incoming()).last_error, /NOTAUTH|TSIG/);
    } finally {
      // Put back whatever failed above: the timer test's primary signs with this key (CI run 6 failed it for that).
      await p.api("PUT", `${A()}/tsigs/${tsigId}`, { name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
    }
    const again = await p.api("POST", `/zones/${secId}/secondary_dns/force_axfr`);
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });

  it("refreshes on the SOA refresh timer, keeps serving while the primary is down, and answers SERVFAIL after the SOA expire", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const peer = await p.api("POST", `${A()}/peers`, { name: "knot-axfr", ip: "127.0.0.1", port: knotPort, tsig_id: tsigId, ixfr_enable: false });
    await p.api("POST", `/zones/${timerId}/secondary_dns/incoming`, { peers: [peer.body.result.id] });
    await until(async () => (await answers(`www.${TIMER}`, "A")) === "192.0.2.81", "the first transfer");
    // No NOTIFY for this zone: only the SOA refresh (1 s) brings the change.
    await knsupdate(knotPort, `hmac-sha256:xfr-key:${tsigSecret}`, TIMER, [`update add new.${TIMER}. 300 A 192.0.2.82`]);
    await until(async () => (await answers(`new.${TIMER}`, "A")) === "192.0.2.82", "the refresh timer to pick up the change");
    await knot!.stop();
    knot = undefined;
    assert.equal(await answers(`www.${SEC}`, "A"), "192.0.2.80", "served with the primary down");
    assert.equal(await answers(`www.${TIMER}`, "A"), "192.0.2.81");
    // The timer zone's SOA expire is 10 s: then it is no longer served; the other zone (a day) still is.
    await until(async () => (await status(`www.${TIMER}`)) === "SERVFAIL", "the SOA expire", 60_000);
    assert.equal(await answers(`www.${SEC}`, "A"), "192.0.2.80");
    await logged(/secondary zone not refreshed; keeping what it holds/, "the failed refreshes in the log");
    const q = await udpQuery(port, `www.${TIMER}`, "A");
    assert.equal(rcodeOf(q), 2);
  });
});
