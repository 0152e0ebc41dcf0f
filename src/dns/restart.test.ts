import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRecord, createZone, startDnsPlatform, udpQuery } from "./testing/helpers.js";

describe("DNS state across a restart", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "edge-dns-restart-"));
  after(() => rmSync(stateDir, { recursive: true, force: true }));

  it("serves the same zones, records and settings after the platform restarts, and the serial keeps growing", async () => {
    const first = await startDnsPlatform([], stateDir);
    const zoneId = await createZone(first.p, "persist.example");
    const rec = await createRecord(first.p, zoneId, { type: "AAAA", name: "www", content: "2001:DB8:0:0::7", ttl: 600, comment: "kept" });
    assert.equal(rec.content, "2001:db8::7", "IPv6 is stored in canonical form");
    await first.p.api("PATCH", `/zones/${zoneId}/dns_settings`, { soa: { min_ttl: 120 } });
    const serialBefore = ((await udpQuery(first.port, "persist.example", "SOA")).answers![0] as any).data.serial;
    await first.p.stop();

    const second = await startDnsPlatform([], stateDir);
    try {
      const aaaa = await udpQuery(second.port, "www.persist.example", "AAAA");
      assert.deepEqual(
        aaaa.answers?.map((a: any) => [a.data, a.ttl]),
        [["2001:db8::7", 600]],
      );
      // The bootstrap credentials are those of the first start; the second start made none.
      const auth = { authorization: `Bearer ${first.p.token}` };
      const got = await second.p.api("GET", `/zones/${zoneId}/dns_records/${rec.id}`, undefined, auth);
      assert.deepEqual(got.body.result, rec);
      const nx = await udpQuery(second.port, "nothing.persist.example", "A");
      assert.equal((nx.authorities?.[0] as { ttl?: number }).ttl, 120, "the SOA settings survived");
      const created = await second.p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "after", content: "restart" }, auth);
      assert.equal(created.status, 200);
      const serialAfter = ((await udpQuery(second.port, "persist.example", "SOA")).answers![0] as any).data.serial;
      assert.ok(serialAfter > serialBefore);
    } finally {
      await second.p.stop();
    }
  });
});
