import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as packet from "dns-packet";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { readDnsConfig, serveOptions } from "../config.js";
import type { DnsRecord, Soa } from "../model.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import { encodeQuery } from "../testing/helpers.js";
import { secondaryRecord } from "../transfers/secondary.js";
import { ZoneService } from "../zones/zone-service.js";
import { newId, now } from "../zones/zone-state.js";
import { AnswerEngine } from "./answer.js";
import { axfrMessages } from "./axfr.js";

const ACCOUNT = "b".repeat(32);
const ZONE = "stream.example";
const RECORDS = 20_000;
const openStore = sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db));

/** `edgecli serve`'s DNS configuration with every option at its default. */
const defaultConfig = () =>
  readDnsConfig(
    Object.fromEntries(Object.entries(serveOptions).map(([k, o]) => [k, (o as { default?: unknown }).default])) as Parameters<typeof readDnsConfig>[0],
  );

const soa = (serial: number): { serial: number; soa: Soa } => ({
  serial,
  soa: { mname: `ns1.${ZONE}`, rname: `hostmaster.${ZONE}`, refresh: 3600, retry: 600, expire: 86400, min_ttl: 300, ttl: 3600 },
});

const record = (zoneId: string, name: string, content: string): DnsRecord =>
  secondaryRecord({ name, type: "A", content, data: null, priority: null, ttl: 300 }, zoneId, newId(), now());

type Decoded = ReturnType<typeof packet.decode>;
const owners = (messages: Buffer[]) =>
  messages.flatMap((m) => (packet.decode(m).answers ?? []).map((a) => `${a.name} ${a.type} ${"data" in a && typeof a.data === "string" ? a.data : ""}`));

/**
 * axfrMessages over a real zone (ZoneService on SQLite): the messages of a large AXFR are produced one at a time as
 * they are asked for, from the version of the zone the transfer began with, whatever changes in between.
 */
describe("an AXFR of a large zone, produced message by message", () => {
  it("sends the version it began with, whole and in order, while the zone changes under it", async () => {
    const { store, close } = await openStore();
    try {
      const zones = new ZoneService(store);
      await zones.load();
      const engine = new AnswerEngine(zones, defaultConfig());
      const zs = await zones.createZone(ACCOUNT, ZONE, "secondary");
      const v1 = Array.from({ length: RECORDS }, (_, i) => record(zs.zone.id, `h${i}.${ZONE}`, "192.0.2.1"));
      // Three addresses at one name: a later change pushes onto that name's list (ZoneState.put).
      v1.push(...["192.0.2.5", "192.0.2.6", "192.0.2.7"].map((a) => record(zs.zone.id, `multi.${ZONE}`, a)));
      await zones.replaceSecondary(zs, soa(1), { upserts: v1, deletes: [] });

      const q: Decoded = packet.decode(encodeQuery(ZONE, "AXFR"));
      const messages = axfrMessages(engine, zs, q)[Symbol.iterator]();
      const first = messages.next();
      assert.ok(!first.done);
      // Version 2, committed while the transfer is under way (small enough to be applied in place).
      const added = record(zs.zone.id, `multi.${ZONE}`, "192.0.2.8");
      const late = record(zs.zone.id, `late.${ZONE}`, "192.0.2.9");
      await zones.replaceSecondary(zs, soa(2), { upserts: [added, late], deletes: [v1[RECORDS - 1].id] });
      assert.equal(zs.at(`multi.${ZONE}`).length, 4);

      const all: Buffer[] = [first.value];
      for (let m = messages.next(); !m.done; m = messages.next()) all.push(m.value);
      assert.ok(all.length > 50, `${all.length} messages`);
      const decoded = all.map((m) => packet.decode(m));
      assert.equal(decoded[0].questions?.[0]?.name, ZONE, "the question in the first message only");
      assert.ok(decoded.slice(1).every((d) => (d.questions ?? []).length === 0));

      const rrs = owners(all);
      assert.match(rrs[0], new RegExp(`^${ZONE} SOA`));
      assert.match(rrs.at(-1)!, new RegExp(`^${ZONE} SOA`));
      const serials = decoded.flatMap((d) => (d.answers ?? []).filter((a) => a.type === "SOA").map((a) => (a.data as { serial: number }).serial));
      assert.deepEqual(serials, [1, 1], "both SOAs of version 1");
      const hosts = rrs.filter((r) => r.startsWith("h"));
      assert.deepEqual(
        hosts,
        v1.slice(0, RECORDS).map((r) => `${r.name} A 192.0.2.1`),
        "every record of version 1, in the zone's order, the one deleted since included",
      );
      assert.deepEqual(
        rrs.filter((r) => r.startsWith("multi.")),
        ["192.0.2.5", "192.0.2.6", "192.0.2.7"].map((a) => `multi.${ZONE} A ${a}`),
        "the address added since is not in it",
      );
      assert.ok(!rrs.some((r) => r.startsWith("late.")), "nor the name added since");

      // A transfer that begins now sends version 2.
      const again = owners([...axfrMessages(engine, zs, q)]);
      assert.ok(again.includes(`late.${ZONE} A 192.0.2.9`));
      assert.ok(!again.includes(`h${RECORDS - 1}.${ZONE} A 192.0.2.1`));
      assert.equal(again.filter((r) => r.startsWith("multi.")).length, 4);
    } finally {
      close();
    }
  });
});
