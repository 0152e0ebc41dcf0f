import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestPlatform } from "../../core/testing/platform.js";
import { dig, digAvailable, startDnsPlatform } from "../testing/helpers.js";
import { freePort, knotAvailable, knsupdate, primaryForPlatform, startKnot, until, type Knot } from "../testing/knot.js";

const KEPT = "kept.example";
const EXPIRING = "expiring.example";

/** Knot sends this zone's changes by NOTIFY; its SOA refresh (an hour) never fires during the test. */
const keptZone = `$ORIGIN ${KEPT}.
$TTL 300
@ SOA ns1.${KEPT}. hostmaster.${KEPT}. 1 3600 600 86400 300
@ NS ns1.${KEPT}.
ns1 A 192.0.2.53
www A 192.0.2.80
`;
/** Checked every 2 s while Knot runs, retried every second when it does not, and expired 8 s after the last answer. */
const expiringZone = `$ORIGIN ${EXPIRING}.
$TTL 300
@ SOA ns1.${EXPIRING}. hostmaster.${EXPIRING}. 1 2 1 8 60
@ NS ns1.${EXPIRING}.
www A 192.0.2.81
`;

/**
 * Secondary zones across restarts of `edgecli serve` (graceful and SIGKILL), with Knot as the primary. The platform
 * listens on the same DNS port each time, so Knot's NOTIFYs reach whichever instance runs.
 */
describe("secondary zones across a platform restart, with Knot as the primary", async () => {
  const tools = (await digAvailable) && (await knotAvailable);
  const stateDir = mkdtempSync(join(tmpdir(), "edge-dns-secondary-restart-"));
  const tsigSecret = randomBytes(32).toString("base64");
  let p: TestPlatform | undefined;
  let port: number;
  let knot: Knot | undefined;
  let knotPort: number;
  let keptId: string;
  let expiringId: string;
  let token: { authorization: string };

  const startPlatform = async () => {
    ({ p } = await startDnsPlatform(["--dns-port", String(port)], stateDir));
    return p;
  };
  const startPrimary = async () =>
    (knot = await startKnot(
      knotPort,
      primaryForPlatform(tsigSecret, port, [
        { domain: KEPT, notify: true },
        { domain: EXPIRING, notify: false },
      ]),
      { [`${KEPT}.zone`]: keptZone, [`${EXPIRING}.zone`]: expiringZone },
    ));
  const update = (zone: string, lines: string[]) => knsupdate(knotPort, `hmac-sha256:xfr-key:${tsigSecret}`, zone, lines);
  const answers = async (name: string, type: string) => (await dig(port, [name, type, "+short"])).trim();
  const serial = async (zone: string) => Number((await answers(zone, "SOA")).split(" ")[2]);
  const status = async (name: string) => /status: (\w+)/.exec(await dig(port, [name, "A"]))?.[1];
  /** The secondary's state as the API shows it (with the first start's token: later starts make no credentials). */
  const incoming = async (zoneId: string) => (await p!.api("GET", `/zones/${zoneId}/secondary_dns/incoming`, undefined, token)).body.result;
  const transfersLogged = () => (p!.logs().match(/"secondary zone transferred"/g) ?? []).length;
  const killed = async (platform: TestPlatform) => {
    const exited = new Promise((resolve) => platform.process.once("exit", resolve));
    platform.process.kill("SIGKILL");
    await exited;
  };

  before(async () => {
    if (!tools) return;
    port = await freePort();
    knotPort = await freePort();
    await startPrimary();
  });
  after(async () => {
    await knot?.stop();
    await p?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("transfers both zones from Knot on the first start", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const first = await startPlatform();
    token = { authorization: `Bearer ${first.token}` };
    const A = `/accounts/${first.accountId}/secondary_dns`;
    const tsig = await first.api("POST", `${A}/tsigs`, { name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
    const peer = await first.api("POST", `${A}/peers`, { name: "knot", ip: "127.0.0.1", port: knotPort, tsig_id: tsig.body.result.id, ixfr_enable: true });
    for (const name of [KEPT, EXPIRING]) {
      const zone = await first.api("POST", "/zones", { name, type: "secondary", account: { id: first.accountId } });
      assert.equal(zone.status, 200, JSON.stringify(zone.body));
      if (name === KEPT) keptId = zone.body.result.id;
      else expiringId = zone.body.result.id;
      const inc = await first.api("POST", `/zones/${zone.body.result.id}/secondary_dns/incoming`, { peers: [peer.body.result.id] });
      assert.equal(inc.status, 200, JSON.stringify(inc.body));
    }
    await until(async () => (await answers(`www.${KEPT}`, "A")) === "192.0.2.80", "the first transfer of kept");
    await until(async () => (await answers(`www.${EXPIRING}`, "A")) === "192.0.2.81", "the first transfer of expiring");
  });

  it("after a graceful stop, answers from the stored zone at once, and a NOTIFY brings the next version", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const transferredBefore = (await incoming(keptId)).last_transferred_time;
    await p!.stop();
    await startPlatform();
    // The first query after "platform ready": the stored records, at the stored serial.
    assert.equal(await answers(`www.${KEPT}`, "A"), "192.0.2.80");
    assert.equal(await serial(KEPT), 1);
    // The refresh at start asks Knot for its SOA, finds the same serial, and transfers nothing.
    await until(async () => (await incoming(keptId)).checked_time > transferredBefore, "the refresh at start");
    assert.equal((await incoming(keptId)).last_transferred_time, transferredBefore);
    assert.equal(transfersLogged(), 0, "served from what was stored, not transferred again");

    await update(KEPT, [`update add after-stop.${KEPT}. 300 TXT "second version"`]);
    await until(async () => (await answers(`after-stop.${KEPT}`, "TXT")) === '"second version"', "Knot's NOTIFY to bring serial 2");
    assert.equal(await serial(KEPT), 2);
    assert.match(p!.logs(), /"how":"IXFR from knot"/);
  });

  it("after SIGKILL, answers the last transferred version at once, and takes the next one on NOTIFY", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    await killed(p!);
    await startPlatform();
    assert.equal(await serial(KEPT), 2);
    assert.equal(await answers(`after-stop.${KEPT}`, "TXT"), '"second version"');
    assert.equal((await incoming(keptId)).soa_serial, 2);

    await update(KEPT, [`update add after-kill.${KEPT}. 300 A 192.0.2.99`, `update delete www.${KEPT}. A`]);
    await until(async () => (await answers(`after-kill.${KEPT}`, "A")) === "192.0.2.99", "serial 3 after the kill");
    assert.equal(await answers(`www.${KEPT}`, "A"), "");
    assert.equal(await serial(KEPT), 3);
  });

  it("a zone whose SOA expire passed while the platform was down answers SERVFAIL until a primary answers again", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    await knot!.stop();
    knot = undefined;
    const lastAnswer = Date.parse((await incoming(expiringId)).checked_time);
    await killed(p!);
    // Down for longer than the zone's SOA expire (8 s) since Knot last answered.
    await until(async () => Date.now() > lastAnswer + 10_000, "the SOA expire to pass", 60_000);
    await startPlatform();
    assert.equal(await status(`www.${EXPIRING}`), "SERVFAIL", "expired: not served from the stored copy");
    assert.equal(await answers(`www.${KEPT}`, "A"), "", "the zone with a day's expire is still served");
    assert.equal(await status(`after-kill.${KEPT}`), "NOERROR");
    // Refreshes keep failing (every SOA retry, a second) and the zone stays unserved.
    await until(async () => /knot \(127\.0\.0\.1:\d+\): /.test((await incoming(expiringId)).last_error ?? ""), "a failed refresh");
    assert.equal(await status(`www.${EXPIRING}`), "SERVFAIL");

    // Knot is back (same serial): the retry timer's SOA check counts as an answer and the zone is served again.
    await startPrimary();
    await until(async () => (await status(`www.${EXPIRING}`)) === "NOERROR", "the zone to be refreshed and served");
    assert.equal(await answers(`www.${EXPIRING}`, "A"), "192.0.2.81");
    assert.equal((await incoming(expiringId)).last_error, null);
  });
});
