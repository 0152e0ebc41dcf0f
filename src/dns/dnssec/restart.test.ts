import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { createRecord, createZone, startDnsPlatform } from "../testing/helpers.js";
import { askDo, delv, delvAvailable, writeTrustAnchor } from "../testing/dnssec.js";

describe("DNSSEC keys across a restart, and with the zone deleted", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "edge-dnssec-restart-"));
  after(() => rmSync(stateDir, { recursive: true, force: true }));

  it("signs with the same keys after the platform restarts (read back from the sealed store), and forgets them with the zone", async () => {
    const first = await startDnsPlatform([], stateDir);
    const zoneId = await createZone(first.p, "restart-sec.example");
    await createRecord(first.p, zoneId, { type: "A", name: "www", content: "203.0.113.80", ttl: 300 });
    const before = (await first.p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active" })).body.result;
    const anchor = await writeTrustAnchor(first.p, zoneId, join(stateDir, "anchor.conf"));
    const keysBefore = (await askDo(first.port, "restart-sec.example", "DNSKEY", true)).answers?.filter((a) => a.type === "DNSKEY");
    await first.p.stop();

    const second = await startDnsPlatform([], stateDir);
    const auth = { authorization: `Bearer ${first.p.token}` };
    try {
      const afterRestart = (await second.p.api("GET", `/zones/${zoneId}/dnssec`, undefined, auth)).body.result;
      assert.equal(afterRestart.ds, before.ds);
      assert.deepEqual(
        (await askDo(second.port, "restart-sec.example", "DNSKEY", true)).answers?.filter((a) => a.type === "DNSKEY"),
        keysBefore,
      );
      if (await delvAvailable) assert.match(await delv(second.port, anchor, "restart-sec.example", "www.restart-sec.example", "A"), /; fully validated/);
      assert.equal((await second.p.api("DELETE", `/zones/${zoneId}`, undefined, auth)).status, 200);
    } finally {
      await second.p.stop();
    }
    const db = new Database(join(stateDir, "db", "dnssec.sqlite"), { readonly: true });
    try {
      assert.equal((db.prepare("SELECT count(*) AS n FROM keys").get() as { n: number }).n, 0, "a deleted zone's keys are gone");
    } finally {
      db.close();
    }
  });
});
