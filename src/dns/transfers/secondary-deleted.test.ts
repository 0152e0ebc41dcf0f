import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { SecretBox } from "../../core/secret-box.js";
import { createLogger } from "../../core/logger.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { startTcpProxy, type TcpProxy } from "../../core/testing/tcp-proxy.js";
import { readDnsConfig, serveOptions } from "../config.js";
import { AnswerEngine } from "../nameserver/answer.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import { freePort, knotAvailable, primaryForPlatform, startKnot, until, type Knot } from "../testing/knot.js";
import { ZoneService } from "../zones/zone-service.js";
import { TransferDirectory } from "./directory.js";
import { SecondaryZones } from "./secondary.js";
import { TRANSFER_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteTransferStore } from "./sqlite-store.js";

const ACCOUNT = "c".repeat(32);
const ZONE = "deleted-during-refresh.example";
const zoneFile = `$ORIGIN ${ZONE}.
$TTL 300
@ SOA ns1.${ZONE}. hostmaster.${ZONE}. 7 3600 600 86400 300
@ NS ns1.${ZONE}.
ns1 A 192.0.2.53
www A 192.0.2.80
`;

/** `edgecli serve`'s DNS configuration with every option at its default. */
const defaultConfig = () =>
  readDnsConfig(
    Object.fromEntries(Object.entries(serveOptions).map(([k, o]) => [k, (o as { default?: unknown }).default])) as Parameters<typeof readDnsConfig>[0],
  );

/**
 * SecondaryZones over real zones and transfer state (SQLite), refreshing from Knot behind a proxy that keeps Knot's
 * answer back on cue: the zone is deleted while its refresh waits for the primary, then the answer is let through.
 * The refresh that ends then must leave nothing keyed by the deleted zone (it put back its status, its next-refresh
 * timer and its served state before).
 */
describe("a secondary zone deleted while a refresh of it is under way", async () => {
  const tools = await knotAvailable;
  let knot: Knot | undefined;
  let proxy: TcpProxy | undefined;
  const secret = randomBytes(32).toString("base64");
  const closers: (() => void)[] = [];
  let zones: ZoneService;
  let directory: TransferDirectory;
  let engine: AnswerEngine;
  let secondary: SecondaryZones;

  before(async () => {
    if (!tools) return;
    const knotPort = await freePort();
    // Knot sends this test no NOTIFY: the port it would send them to is never listened on.
    knot = await startKnot(knotPort, primaryForPlatform(secret, await freePort(), [{ domain: ZONE, notify: false }]), { [`${ZONE}.zone`]: zoneFile });
    proxy = await startTcpProxy(`tcp://127.0.0.1:${knotPort}`);
    const dns = await sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db))();
    const transfers = await sqliteStoreFactory(TRANSFER_MIGRATIONS, (db, dir) => new SqliteTransferStore(db, SecretBox.load(dir)))();
    closers.push(dns.close, transfers.close);
    const log = createLogger({ level: "silent" });
    zones = new ZoneService(dns.store);
    await zones.load();
    engine = new AnswerEngine(zones, defaultConfig());
    directory = new TransferDirectory(transfers.store, log);
    await directory.load();
    secondary = new SecondaryZones(
      zones,
      directory,
      engine,
      log,
      () => {},
      () => true,
    );
    // What the DNS service does when a secondary zone is deleted (transfers.ts zoneChanged).
    zones.onChange((zs, kind) => {
      if (kind !== "deleted") return;
      secondary.forget(zs.zone.id);
      void directory.deleteIncoming(zs.zone.id);
    });
  });
  after(async () => {
    secondary?.stop();
    await proxy?.close();
    await knot?.stop();
    for (const close of closers) close();
  });

  /** A secondary zone whose primary is Knot through the proxy, TSIG-signed; not refreshed yet. */
  async function secondaryZone() {
    const zs = await zones.createZone(ACCOUNT, ZONE, "secondary");
    const key = await directory.putTsig(ACCOUNT, { name: "xfr-key", algorithm: "hmac-sha256", secret });
    const peer = await directory.putPeer(ACCOUNT, { name: "knot", ip: "127.0.0.1", port: proxy!.port, tsig_id: key.id, ixfr_enable: true });
    await directory.putIncoming(zs.zone, { peers: [peer.id], auto_refresh_seconds: 3600 }, true);
    return zs;
  }

  /** Refreshes the zone with Knot's answer held, deletes the zone, then lets the answer through; the refresh's end. */
  async function deleteDuringRefresh(zs: Awaited<ReturnType<typeof secondaryZone>>): Promise<void> {
    const hold = proxy!.hold();
    try {
      const refreshing = secondary.refreshNow(zs.zone.id);
      await until(async () => hold.keptBytes() > 0, "Knot's answer to be held");
      await zones.deleteZone(zs);
      assert.equal(zones.get(zs.zone.id), undefined);
      hold.release();
      await refreshing;
    } finally {
      hold.release();
    }
  }

  function assertNothingKept(zoneId: string): void {
    assert.deepEqual(secondary.timesOf(zoneId), { next_refresh_time: null, expires_time: null }, "no refresh timer, no expire timer");
    assert.deepEqual(secondary.statusOf(zoneId), { last_error: null, skipped_records: 0 }, "no status");
    assert.equal(zones.serving.isServed(zoneId), true, "no serving state (a zone withheld stays withheld while it exists)");
    assert.equal(directory.incomingOf(zoneId), undefined, "no incoming configuration");
  }

  it("keeps nothing of a first transfer (AXFR) that ends after the deletion", async (t) => {
    if (!tools) return t.skip("knot not installed");
    const zs = await secondaryZone();
    await deleteDuringRefresh(zs);
    assertNothingKept(zs.zone.id);
  });

  it("keeps nothing of a SOA check that ends after the deletion", async (t) => {
    if (!tools) return t.skip("knot not installed");
    const zs = await secondaryZone();
    await secondary.refreshNow(zs.zone.id);
    assert.equal(zs.zone.serial, 7, "the first transfer is in");
    assert.ok(secondary.timesOf(zs.zone.id).next_refresh_time, "the next refresh is armed");
    await deleteDuringRefresh(zs);
    assertNothingKept(zs.zone.id);
  });
});
