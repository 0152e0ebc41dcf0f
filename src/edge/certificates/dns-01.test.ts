import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EdgeError } from "../../core/errors.js";
import { createLogger } from "../../core/logger.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { DnsCodes } from "../../dns/errors.js";
import { DNS_MIGRATIONS } from "../../dns/sqlite-migrations.js";
import { SqliteDnsStore } from "../../dns/sqlite-store.js";
import { ZoneService } from "../../dns/zones/zone-service.js";
import { zonesPort } from "../../dns/zones/zones-port.js";
import { ChallengeRecords } from "./dns-01.js";

const openStore = sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db));
const ACCOUNT = "a".repeat(32);

/** A hostname of `length` characters in `zone`, made of 63-character labels. */
function longName(length: number, zone: string): string {
  const labels: string[] = [];
  let left = length - zone.length - 1;
  while (left > 0) {
    const n = Math.min(63, left === 64 ? 62 : left);
    labels.push("x".repeat(n));
    left -= n + 1;
  }
  const name = `${labels.join(".")}.${zone}`;
  assert.equal(name.length, length);
  return name;
}

describe("DNS-01 challenge records", () => {
  it("refuses a challenge name longer than 253 characters: nothing is written to the zone (issue 30, hole 11)", async () => {
    const { store, close } = await openStore();
    try {
      const zones = new ZoneService(store);
      await zones.load();
      const zs = await zones.createZone(ACCOUNT, "long.example");
      const serial = zs.zone.serial;
      const host = longName(250, "long.example");
      const answerer = new ChallengeRecords(zonesPort(zones), createLogger({ level: "silent" })).forOrder(host, ACCOUNT);
      // Before the fix the record went in: a 266-character owner name, in every answer and AXFR of the zone.
      await assert.rejects(
        answerer.create(`_acme-challenge.${host}`, "token"),
        (e: unknown) => e instanceof EdgeError && e.errors[0]!.code === DnsCodes.nameInvalid,
      );
      assert.equal(zs.records.size, 0);
      assert.equal(zs.zone.serial, serial, "the zone did not change");
      assert.equal((await store.listRecords(zs.zone.id)).records.length, 0);

      // The longest Custom Domain's challenge (237 + 16 = 253 characters) is still written and removed.
      const longest = longName(237, "long.example");
      const ok = new ChallengeRecords(zonesPort(zones), createLogger({ level: "silent" })).forOrder(longest, ACCOUNT);
      await ok.create(`_acme-challenge.${longest}`, "token");
      assert.equal(zs.records.size, 1);
      await ok.remove(`_acme-challenge.${longest}`, "token");
      assert.equal(zs.records.size, 0);
    } finally {
      await close();
    }
  });
});
