import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { EdgeError } from "../core/errors.js";
import { storeContract } from "../core/testing/contract.js";
import { DnsCodes } from "./errors.js";
import type { DnsRecord, Zone, ZoneSettings } from "./model.js";
import { ZoneChangedError, type DnsStore } from "./store.js";

const id = () => randomBytes(16).toString("hex");

const settings = (refresh = 10000): ZoneSettings => ({
  soa: { mname: null, rname: "dns.example.test", refresh, retry: 2400, expire: 604800, ttl: 3600, min_ttl: 1800 },
  flatten_all_cnames: false,
  ns_ttl: 86400,
});

export const newZone = (name: string, accountId = "a".repeat(32)): Zone => ({
  id: id(),
  account_id: accountId,
  name,
  paused: false,
  created_on: "2026-01-01T00:00:00.000Z",
  modified_on: "2026-01-01T00:00:00.000Z",
  activated_on: "2026-01-01T00:00:00.000Z",
  serial: 1_767_225_600,
  settings: settings(),
});

/** A TXT record of the zone; `created` orders records (an ISO time), `fields` overrides any field. */
export const record = (zone: Zone, label: string, created = "2026-01-02T00:00:00.000Z", fields: Partial<DnsRecord> = {}): DnsRecord => ({
  id: id(),
  zone_id: zone.id,
  name: `${label}.${zone.name}`,
  type: "TXT",
  content: `"${label}"`,
  data: null,
  priority: null,
  ttl: 1,
  proxied: false,
  comment: null,
  tags: [],
  settings: {},
  created_on: created,
  modified_on: created,
  comment_modified_on: null,
  tags_modified_on: null,
  ...fields,
});

/** Every record of a zone, page after page. */
async function allRecords(store: DnsStore, zoneId: string, limit?: number): Promise<DnsRecord[]> {
  const out: DnsRecord[] = [];
  let after: string | undefined;
  do {
    const page = await store.listRecords(zoneId, { after, limit });
    out.push(...page.records);
    after = page.next;
  } while (after !== undefined);
  return out;
}

const refusedWith = (code: number) => (err: unknown) => err instanceof EdgeError && err.errors[0].code === code;

/** What every DnsStore does, whatever keeps the data (run by sqlite-store.test.ts and pg-store.test.ts). */
export const describeDnsStore = storeContract<DnsStore>("DnsStore", (it) => {
  it("keeps zones as written, lists them by name, and refuses a second zone with the same name", async (store) => {
    const b = newZone("b.example");
    const a = { ...newZone("a.example", "c".repeat(32)), paused: true, activated_on: null };
    await store.createZone(b);
    await store.createZone(a);
    assert.deepEqual(await store.getZone(a.id), a);
    assert.deepEqual(await store.listZones(), [a, b]);
    assert.equal(await store.getZone(id()), undefined);
    assert.deepEqual((await store.zoneIdsNamed(["x.a.example", "a.example", "b.example", "example"])).sort(), [a.id, b.id].sort());
    assert.deepEqual(await store.zoneIdsNamed(["nothing.example"]), []);
    assert.deepEqual(await store.zoneIdsNamed([]), []);
    await assert.rejects(store.createZone(newZone("a.example")), refusedWith(DnsCodes.zoneExists));
    assert.equal((await store.listZones()).length, 2);
  });

  it("updates only what may change of a zone: paused, settings, serial and modified_on", async (store) => {
    const z = newZone("update.example");
    await store.createZone(z);
    const changed: Zone = {
      ...z,
      paused: true,
      settings: settings(20000),
      serial: z.serial + 1,
      modified_on: "2026-02-01T00:00:00.000Z",
      // None of these can change: a zone keeps its name, account and history.
      name: "renamed.example",
      account_id: "b".repeat(32),
      created_on: "2030-01-01T00:00:00.000Z",
    };
    await store.updateZone(changed);
    assert.deepEqual(await store.getZone(z.id), {
      ...z,
      paused: true,
      settings: settings(20000),
      serial: z.serial + 1,
      modified_on: "2026-02-01T00:00:00.000Z",
    });
  });

  it("keeps every field of a record as written", async (store) => {
    const z = newZone("fields.example");
    await store.createZone(z);
    const srv = record(z, "_sip._tcp", "2026-01-02T00:00:00.000Z", {
      type: "SRV",
      content: "5 5060 sip.fields.example",
      data: { priority: 10, weight: 5, port: 5060, target: "sip.fields.example" },
      priority: 10,
      ttl: 3600,
      comment: "a note",
      tags: ["env:prod", "team"],
      comment_modified_on: "2026-01-02T00:00:00.000Z",
      tags_modified_on: "2026-01-02T00:00:00.000Z",
    });
    const a = record(z, "www", "2026-01-03T00:00:00.000Z", { type: "A", content: "203.0.113.1", proxied: true, settings: { ipv4_only: true } });
    await store.updateZone(z, { upserts: [srv, a] });
    assert.deepEqual(await allRecords(store, z.id), [srv, a]);
  });

  it("writes a zone's record changes together: deletes, then upserts that add or replace by id", async (store) => {
    const z = newZone("changes.example");
    await store.createZone(z);
    const one = record(z, "one", "2026-01-02T00:00:00.000Z");
    const two = record(z, "two", "2026-01-03T00:00:00.000Z");
    await store.updateZone(z, { upserts: [one, two] });
    const twoChanged = { ...two, content: '"changed"', modified_on: "2026-01-04T00:00:00.000Z" };
    const three = record(z, "three", "2026-01-05T00:00:00.000Z");
    // A record deleted and written again in the same change is there afterwards.
    const oneAgain = { ...one, content: '"again"' };
    const zone = { ...z, serial: z.serial + 1 };
    await store.updateZone(zone, { deletes: [one.id], upserts: [twoChanged, three, oneAgain] });
    assert.deepEqual(await allRecords(store, z.id), [oneAgain, twoChanged, three]);
    await store.updateZone(zone, { deletes: [one.id, three.id, id()] });
    assert.deepEqual(await allRecords(store, z.id), [twoChanged]);
    assert.equal((await store.getZone(z.id))!.serial, z.serial + 1);
  });

  it("writes all of a change or nothing: a zone that is gone, or a record id of another zone, leaves everything as it was", async (store) => {
    const gone = newZone("gone.example");
    await assert.rejects(store.updateZone(gone, { upserts: [record(gone, "orphan")] }), refusedWith(DnsCodes.invalidZone));
    assert.deepEqual(await store.listZones(), []);

    const mine = newZone("mine.example");
    const theirs = newZone("theirs.example", "b".repeat(32));
    await store.createZone(mine);
    await store.createZone(theirs);
    const kept = record(mine, "kept");
    const theirRecord = record(theirs, "theirs");
    await store.updateZone(mine, { upserts: [kept] });
    await store.updateZone(theirs, { upserts: [theirRecord] });
    // The last upsert reuses the id of the other zone's record: the whole change is refused, deletes included.
    const attempt = store.updateZone(
      { ...mine, serial: mine.serial + 5 },
      { deletes: [kept.id], upserts: [record(mine, "new"), { ...theirRecord, zone_id: mine.id, content: '"taken"' }] },
    );
    await assert.rejects(attempt);
    assert.deepEqual(await allRecords(store, mine.id), [kept]);
    assert.deepEqual(await allRecords(store, theirs.id), [theirRecord]);
    assert.equal((await store.getZone(mine.id))!.serial, mine.serial);
  });

  it("lists a zone's records in creation order (then by id), a page at a time, and only that zone's", async (store) => {
    const z = newZone("pages.example");
    const other = newZone("other.example");
    await store.createZone(z);
    await store.createZone(other);
    // Written out of order; five share one creation time, so their ids order them.
    const records = [
      ...Array.from({ length: 5 }, (_, i) => record(z, `later${i}`, `2026-01-0${i + 5}T00:00:00.000Z`)),
      ...Array.from({ length: 5 }, (_, i) => record(z, `tie${i}`, "2026-01-02T00:00:00.000Z")),
      record(z, "first", "2026-01-01T00:00:00.000Z"),
    ];
    await store.updateZone(z, { upserts: records });
    await store.updateZone(other, { upserts: [record(other, "elsewhere", "2026-01-03T00:00:00.000Z")] });
    const expected = [...records].sort((a, b) => (a.created_on === b.created_on ? (a.id < b.id ? -1 : 1) : a.created_on < b.created_on ? -1 : 1));
    const first = await store.listRecords(z.id, { limit: 4 });
    assert.deepEqual(first.records, expected.slice(0, 4));
    assert.notEqual(first.next, undefined);
    const second = await store.listRecords(z.id, { after: first.next, limit: 4 });
    assert.deepEqual(second.records, expected.slice(4, 8));
    assert.deepEqual(await allRecords(store, z.id, 4), expected);
    assert.deepEqual(await allRecords(store, z.id, 1), expected);
    assert.deepEqual(await allRecords(store, z.id), expected, "the default page size");
    assert.deepEqual(await store.listRecords(id()), { records: [], next: undefined });
  });

  it("takes a large import in one change and gives it back whole, in order", async (store) => {
    const z = newZone("import.example");
    await store.createZone(z);
    const base = Date.parse("2026-01-01T00:00:00.000Z");
    const records = Array.from({ length: 5000 }, (_, i) => record(z, `r${i}`, new Date(base + i).toISOString()));
    await store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: records });
    assert.deepEqual(await allRecords(store, z.id), records);
  });

  it("deletes a zone with its records, and nothing of other zones", async (store) => {
    const doomed = newZone("doomed.example");
    const bystander = newZone("bystander.example");
    await store.createZone(doomed);
    await store.createZone(bystander);
    await store.updateZone(doomed, { upserts: [record(doomed, "a"), record(doomed, "b")] });
    const kept = record(bystander, "kept");
    await store.updateZone(bystander, { upserts: [kept] });
    assert.equal(await store.deleteZone(doomed.id), true);
    assert.equal(await store.deleteZone(doomed.id), false);
    assert.equal(await store.getZone(doomed.id), undefined);
    assert.deepEqual(await allRecords(store, doomed.id), []);
    assert.deepEqual(await allRecords(store, bystander.id), [kept]);
    // The name is free again.
    await store.createZone(newZone("doomed.example"));
  });

  it("keeps each account's defaults for new zones apart, and a put replaces them", async (store) => {
    const a = "a".repeat(32);
    const b = "b".repeat(32);
    assert.equal(await store.accountSettings(a), undefined);
    await store.putAccountSettings(a, settings(20000));
    assert.deepEqual(await store.accountSettings(a), settings(20000));
    assert.equal(await store.accountSettings(b), undefined);
    await store.putAccountSettings(a, { ...settings(30000), flatten_all_cnames: true });
    assert.deepEqual(await store.accountSettings(a), { ...settings(30000), flatten_all_cnames: true });
  });
  it("lists zones in the byte order of their names, whatever the database's locale", async (store) => {
    // A locale that skips punctuation (glibc's en_US) would put ab.example before a-c.example.
    const names = ["ab.example", "a0.example", "a.example", "xn--bcher-kva.example", "a-c.example"];
    for (const name of names) await store.createZone(newZone(name));
    assert.deepEqual(
      (await store.listZones()).map((z) => z.name),
      ["a-c.example", "a.example", "a0.example", "ab.example", "xn--bcher-kva.example"],
    );
  });

  it("keeps text that a database could read as syntax exactly as written", async (store) => {
    const z = newZone("text.example");
    await store.createZone(z);
    const odd = [
      record(z, "quotes", "2026-01-02T00:00:00.000Z", {
        content: '"a \\"quoted\\" word" "back\\\\slash, {brace} (paren) NULL ünï ✓"',
        comment: "NULL",
        tags: ["NULL", "é:ü", 'a"b', "{x,y}"],
      }),
      record(z, "nul", "2026-01-03T00:00:00.000Z", { content: '""', comment: "", tags: [] }),
      record(z, "data", "2026-01-04T00:00:00.000Z", {
        type: "CAA",
        content: '0 issue "ca.example; account=\\"x\\""',
        data: { flags: 0, tag: "issue", value: 'ca.example; account="x"', nested: { list: [1, null, "NULL"] } },
      }),
    ];
    await store.updateZone(z, { upserts: odd });
    assert.deepEqual(await allRecords(store, z.id), odd);
  });

  it("refuses a write made against a serial that is no longer the stored one, and writes nothing of it", async (store) => {
    const z = newZone("stale.example");
    await store.createZone(z);
    const first = record(z, "first");
    await store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: [first] }, { ifSerial: z.serial });
    // Another writer that still had the zone at z.serial: refused whole, the zone row included.
    const late = { ...z, serial: z.serial + 1, paused: true };
    await assert.rejects(
      store.updateZone(late, { deletes: [first.id], upserts: [record(z, "late")] }, { ifSerial: z.serial }),
      (err: unknown) => err instanceof ZoneChangedError && err.zoneId === z.id,
    );
    assert.deepEqual(await allRecords(store, z.id), [first]);
    assert.deepEqual(await store.getZone(z.id), { ...z, serial: z.serial + 1 });
    // Against the stored serial it goes through; a zone that is gone is still "not found", whatever the condition.
    await store.updateZone({ ...z, serial: z.serial + 2 }, { deletes: [first.id] }, { ifSerial: z.serial + 1 });
    assert.deepEqual(await allRecords(store, z.id), []);
    await assert.rejects(store.updateZone(newZone("never.example"), {}, { ifSerial: 1 }), refusedWith(DnsCodes.invalidZone));
  });

  it("lets one of two writers racing from the same serial win; the other is refused and changes nothing", async (store) => {
    const z = newZone("race.example");
    await store.createZone(z);
    const mine = record(z, "mine");
    const theirs = record(z, "theirs");
    const results = await Promise.allSettled([
      store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: [mine] }, { ifSerial: z.serial }),
      store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: [theirs] }, { ifSerial: z.serial }),
    ]);
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    assert.equal(won.length, 1, "exactly one write went through");
    const lost = results[1 - won[0]] as PromiseRejectedResult;
    assert.ok(lost.reason instanceof ZoneChangedError, String(lost.reason));
    assert.deepEqual(await allRecords(store, z.id), [won[0] === 0 ? mine : theirs]);
  });

  it("goes on from a page position whose record was deleted meanwhile, and ends after the last", async (store) => {
    const z = newZone("moving.example");
    await store.createZone(z);
    const records = Array.from({ length: 6 }, (_, i) => record(z, `r${i}`, `2026-01-0${i + 1}T00:00:00.000Z`));
    await store.updateZone(z, { upserts: records });
    const first = await store.listRecords(z.id, { limit: 3 });
    assert.deepEqual(first.records, records.slice(0, 3));
    // The record the position names, and the one after it, go; one is added before the position.
    await store.updateZone(z, { deletes: [records[2].id, records[3].id], upserts: [record(z, "early", "2026-01-01T12:00:00.000Z")] });
    assert.deepEqual((await store.listRecords(z.id, { after: first.next, limit: 3 })).records, records.slice(4));
    const last = await store.listRecords(z.id, { after: `${records[5].created_on} ${records[5].id}` });
    assert.deepEqual(last, { records: [], next: undefined });
  });

  it("refuses whole a change that adds records past maxRecords, counting what it adds, replaces and removes; other zones unaffected", async (store) => {
    const z = newZone("quota.example");
    const other = newZone("quota-other.example", "d".repeat(32));
    await store.createZone(z);
    await store.createZone(other);
    const three = [record(z, "a"), record(z, "b"), record(z, "c")];
    // Records of one creation time come back in id order: compared by name.
    const byName = (rs: DnsRecord[]) => [...rs].sort((x, y) => x.name.localeCompare(y.name));
    await store.updateZone(z, { upserts: three }, { maxRecords: 3 });
    // A fourth record, even with the zone row changed beside it: nothing of it written.
    await assert.rejects(store.updateZone({ ...z, paused: true }, { upserts: [record(z, "d")] }, { maxRecords: 3 }), refusedWith(DnsCodes.recordQuota));
    assert.deepEqual(byName(await allRecords(store, z.id)), three);
    assert.deepEqual(await store.getZone(z.id), z);
    // Replacing records adds none; one removed makes room for one added, in the same change.
    const replaced = { ...three[0], content: '"a2"' };
    const d = record(z, "d");
    await store.updateZone(z, { deletes: [three[1].id], upserts: [replaced, d] }, { maxRecords: 3 });
    assert.deepEqual(byName(await allRecords(store, z.id)), [replaced, three[2], d]);
    // The other account's zone has its own count.
    await store.updateZone(other, { upserts: [record(other, "x"), record(other, "y"), record(other, "z")] }, { maxRecords: 3 });
    // A zone already past a lowered limit can still be changed and shrunk, not grown.
    await store.updateZone(z, { upserts: [{ ...d, content: '"d2"' }] }, { maxRecords: 2 });
    await assert.rejects(
      store.updateZone(z, { deletes: [d.id], upserts: [record(z, "e"), record(z, "f")] }, { maxRecords: 2 }),
      refusedWith(DnsCodes.recordQuota),
    );
    await store.updateZone(z, { deletes: [d.id] }, { maxRecords: 2 });
    assert.equal((await allRecords(store, z.id)).length, 2);
    assert.equal((await allRecords(store, other.id)).length, 3);
    // Without a limit nothing is refused, and the count still follows (the limit below sees all 1,002).
    await store.updateZone(z, { upserts: Array.from({ length: 1000 }, (_, i) => record(z, `bulk${i}`)) });
    await assert.rejects(store.updateZone(z, { upserts: [record(z, "one-more")] }, { maxRecords: 1002 }), refusedWith(DnsCodes.recordQuota));
  });

  it("refuses a large change past maxRecords after writing it in parts, leaving the zone as it was", async (store) => {
    const z = newZone("quota-large.example");
    await store.createZone(z);
    const kept = record(z, "kept");
    await store.updateZone(z, { upserts: [kept] });
    const many = Array.from({ length: 3000 }, (_, i) => record(z, `r${i}`));
    await assert.rejects(
      store.updateZone({ ...z, serial: z.serial + 1 }, { deletes: [kept.id], upserts: many }, { maxRecords: 2999 }),
      refusedWith(DnsCodes.recordQuota),
    );
    assert.deepEqual(await allRecords(store, z.id), [kept]);
    assert.deepEqual(await store.getZone(z.id), z);
    await store.updateZone({ ...z, serial: z.serial + 1 }, { deletes: [kept.id], upserts: many }, { maxRecords: 3000 });
    assert.equal((await allRecords(store, z.id)).length, 3000);
  });

  it("lets only as many of two racing writers through as the limit holds, whatever each read before", async (store) => {
    const z = newZone("quota-race.example");
    await store.createZone(z);
    // Neither writer names a serial (as a secondary zone's transfer does not): only the store's count stands between them.
    const mine = [record(z, "m1"), record(z, "m2")];
    const theirs = [record(z, "t1"), record(z, "t2")];
    const results = await Promise.allSettled([
      store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: mine }, { maxRecords: 3 }),
      store.updateZone({ ...z, serial: z.serial + 2 }, { upserts: theirs }, { maxRecords: 3 }),
    ]);
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    assert.equal(won.length, 1, "exactly one write went through");
    assert.ok(refusedWith(DnsCodes.recordQuota)((results[1 - won[0]] as PromiseRejectedResult).reason));
    const names = (await allRecords(store, z.id)).map((r) => r.name).sort();
    assert.deepEqual(
      names,
      (won[0] === 0 ? mine : theirs).map((r) => r.name),
    );
  });
});
