import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../core/logger.js";
import { SecretBox } from "../../core/secret-box.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { readDnsConfig, serveOptions } from "../config.js";
import type { DnsRecord, RecordType } from "../model.js";
import { AnswerEngine } from "../nameserver/answer.js";
import { wireRr, zoneContent } from "../nameserver/axfr.js";
import { decodeRr } from "../nameserver/wire-codecs.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import { ZoneService } from "../zones/zone-service.js";
import { newId, now, type ZoneState } from "../zones/zone-state.js";
import { TransferJournal } from "./journal.js";
import { SqliteTransferStore } from "./sqlite-store.js";
import { TRANSFER_MIGRATIONS } from "./sqlite-migrations.js";
import { randomBytes } from "node:crypto";

const ACCOUNT = "c".repeat(32);
const Z = "journal.example";
const openDns = sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db));
const openTransfers = sqliteStoreFactory(TRANSFER_MIGRATIONS, (db) => new SqliteTransferStore(db, SecretBox.fromKey(randomBytes(32))));

/** `edgecli serve`'s DNS configuration with every option at its default (edge addresses 192.0.2.10-11, 2001:db8::10-11). */
const defaultConfig = () =>
  readDnsConfig(
    Object.fromEntries(Object.entries(serveOptions).map(([k, o]) => [k, (o as { default?: unknown }).default])) as Parameters<typeof readDnsConfig>[0],
  );

const rec = (zs: ZoneState, name: string, type: RecordType, content: string, more: Partial<DnsRecord> = {}): DnsRecord => ({
  id: newId(),
  zone_id: zs.zone.id,
  name: name === "@" ? Z : `${name}.${Z}`,
  type,
  content,
  data: null,
  priority: type === "MX" ? 10 : null,
  ttl: 300,
  proxied: false,
  comment: null,
  tags: [],
  settings: {},
  created_on: now(),
  modified_on: now(),
  comment_modified_on: null,
  tags_modified_on: null,
  ...more,
});

/** A record as text, to compare journal entries with what is expected. */
const show = (b: Buffer) => {
  const r = decodeRr(b) as { name: string; type: string; data: unknown };
  const data = Array.isArray(r.data)
    ? r.data.map((s: Buffer) => JSON.stringify(s.toString())).join(" ")
    : typeof r.data === "string"
      ? r.data
      : JSON.stringify(r.data);
  return `${r.name} ${r.type} ${data}`;
};
const axfrSet = (engine: AnswerEngine, zs: ZoneState) => new Set(zoneContent(engine, zs).map((r) => wireRr(r).toString("latin1")));

/**
 * A watched zone (ZoneService on SQLite, TransferJournal on SQLite) whose every change is journaled, and what each
 * change journaled, read back as the IXFR a secondary at the previous serial gets.
 */
async function setup(t: { after(fn: () => void): void }) {
  const dns = await openDns();
  const xfr = await openTransfers();
  t.after(() => (dns.close(), xfr.close()));
  const zones = new ZoneService(dns.store);
  await zones.load();
  const engine = new AnswerEngine(zones, defaultConfig());
  const journal = new TransferJournal(xfr.store, engine, createLogger({ level: "silent" }), { maxEntries: 10_000, maxRecords: 10_000_000 });
  zones.onChange((zs, kind) => (kind === "deleted" ? journal.deleted(zs.zone.id) : journal.changed(zs)));
  const zs = await zones.createZone(ACCOUNT, Z);
  const base = [
    rec(zs, "www", "A", "203.0.113.1"),
    rec(zs, "www", "A", "203.0.113.2"),
    rec(zs, "mail", "A", "203.0.113.25"),
    rec(zs, "@", "MX", `mail.${Z}`),
    rec(zs, "app", "A", "203.0.113.80", { proxied: true }),
    rec(zs, "app", "TXT", "app text"),
    rec(zs, "solo", "TXT", "alone"),
  ];
  await zones.editRecords(zs, (d) => base.forEach((r) => d.set(r)));
  journal.watch(zs);
  /** Applies `edit`, and returns the change journaled for it (removed, added), as text. */
  const change = async (edit: () => Promise<unknown>) => {
    const from = zs.zone.serial;
    await edit();
    const ixfr = journal.incremental(zs, from);
    assert.ok(ixfr, "the journal reaches back to the previous serial");
    // current SOA, old SOA, removed..., new SOA, added..., current SOA
    const soaAt = ixfr.flatMap((b, i) => (decodeRr(b).type === "SOA" ? [i] : []));
    assert.equal(soaAt.length, 4, "one change");
    return {
      removed: ixfr
        .slice(soaAt[1] + 1, soaAt[2])
        .map(show)
        .sort(),
      added: ixfr
        .slice(soaAt[2] + 1, soaAt[3])
        .map(show)
        .sort(),
    };
  };
  const edit = (fn: Parameters<ZoneService["editRecords"]>[1]) => () => zones.editRecords(zs, fn);
  return { zones, engine, journal, zs, base, change, edit };
}

describe("the IXFR journal: differences per name", () => {
  it("adds, removes and replaces a record in a name, and deletes the last record of one", async (t) => {
    const { zs, base, change, edit } = await setup(t);
    const added = rec(zs, "www", "A", "203.0.113.3");
    assert.deepEqual(await change(edit((d) => d.set(added))), { removed: [], added: [`www.${Z} A 203.0.113.3`] });
    assert.deepEqual(await change(edit((d) => d.delete(base[0].id))), { removed: [`www.${Z} A 203.0.113.1`], added: [] });
    assert.deepEqual(await change(edit((d) => d.set({ ...added, content: "203.0.113.4" }))), {
      removed: [`www.${Z} A 203.0.113.3`],
      added: [`www.${Z} A 203.0.113.4`],
    });
    assert.deepEqual(await change(edit((d) => d.delete(base[6].id))), { removed: [`solo.${Z} TXT "alone"`], added: [] });
    const back = rec(zs, "solo", "TXT", "back");
    assert.deepEqual(await change(edit((d) => d.set(back))), { removed: [], added: [`solo.${Z} TXT "back"`] });
  });

  it("sends a proxied name as the edge's addresses, and its origin once the record is no longer proxied", async (t) => {
    const { zs, change, edit } = await setup(t);
    const mail = zs.at(`mail.${Z}`)[0];
    assert.deepEqual(await change(edit((d) => d.set({ ...mail, proxied: true }))), {
      removed: [`mail.${Z} A 203.0.113.25`],
      added: [`mail.${Z} A 192.0.2.10`, `mail.${Z} A 192.0.2.11`, `mail.${Z} AAAA 2001:db8::10`, `mail.${Z} AAAA 2001:db8::11`],
    });
    const app = zs.at(`app.${Z}`).find((r) => r.type === "A")!;
    assert.deepEqual(await change(edit((d) => d.set({ ...app, proxied: false }))), {
      removed: [`app.${Z} A 192.0.2.10`, `app.${Z} A 192.0.2.11`, `app.${Z} AAAA 2001:db8::10`, `app.${Z} AAAA 2001:db8::11`],
      added: [`app.${Z} A 203.0.113.80`],
    });
  });

  it("compares every name again when a zone setting changes how they are sent (paused: proxied names go to the origin)", async (t) => {
    const { zones, zs, change } = await setup(t);
    const edge = [`app.${Z} A 192.0.2.10`, `app.${Z} A 192.0.2.11`, `app.${Z} AAAA 2001:db8::10`, `app.${Z} AAAA 2001:db8::11`];
    assert.deepEqual(await change(() => zones.updateZone(zs, () => ({ paused: true }))), { removed: edge, added: [`app.${Z} A 203.0.113.80`] });
    assert.deepEqual(await change(() => zones.updateZone(zs, () => ({ paused: false }))), { removed: [`app.${Z} A 203.0.113.80`], added: edge });
    // A setting that changes only the SOA journals no record.
    const soa = { ...zs.zone.settings.soa, refresh: 7200 };
    assert.deepEqual(await change(() => zones.updateZone(zs, (z) => ({ settings: { ...z.settings, soa } }))), { removed: [], added: [] });
    // The apex NS TTL: the apex is compared on every change.
    const ns = await change(() => zones.updateZone(zs, (z) => ({ settings: { ...z.settings, ns_ttl: 3600 } })));
    assert.equal(ns.removed.length, ns.added.length);
    assert.ok(ns.added.length > 0 && ns.added.every((r) => r.startsWith(`${Z} NS `)), JSON.stringify(ns));
  });

  it("follows a flattened apex CNAME when its target's addresses change", async (t) => {
    const { zs, base, change, edit } = await setup(t);
    const cname = rec(zs, "@", "CNAME", `www.${Z}`);
    const first = await change(edit((d) => (d.delete(base[3].id), d.set(cname))));
    assert.deepEqual(first, { removed: [`${Z} MX {"preference":10,"exchange":"mail.${Z}"}`], added: [`${Z} A 203.0.113.1`, `${Z} A 203.0.113.2`] });
    // Only www's records change: the apex's flattened addresses follow.
    assert.deepEqual(await change(edit((d) => d.set({ ...base[1], content: "203.0.113.9" }))), {
      removed: [`${Z} A 203.0.113.2`, `www.${Z} A 203.0.113.2`],
      added: [`${Z} A 203.0.113.9`, `www.${Z} A 203.0.113.9`],
    });
    assert.deepEqual(await change(edit((d) => d.set({ ...cname, content: `mail.${Z}` }))), {
      removed: [`${Z} A 203.0.113.1`, `${Z} A 203.0.113.9`],
      added: [`${Z} A 203.0.113.25`],
    });
  });

  it("journals, over random edits, exactly what turns the zone's AXFR before into its AXFR after", async (t) => {
    const { zones, engine, journal, zs, change, edit } = await setup(t);
    const seed = Number(process.env.JOURNAL_SEED ?? Date.now() % 100_000);
    let state = seed;
    const rand = (n: number) => ((state = (state * 1103515245 + 12345) % 2 ** 31), state % n);
    const names = ["@", "www", "mail", "app", "a", "b", "c.d", "e", "f.g.h"];
    const types: RecordType[] = ["A", "AAAA", "TXT"];
    const content = (type: RecordType) => (type === "A" ? `198.51.100.${rand(6)}` : type === "AAAA" ? `2001:db8:1::${rand(6)}` : `text ${rand(6)}`);
    const start = { serial: zs.zone.serial, axfr: axfrSet(engine, zs) };
    for (let step = 0; step < 150; step++) {
      const before = axfrSet(engine, zs);
      const all = [...zs.records.values()];
      const pick = () => all[rand(all.length)];
      const kind = rand(8);
      const type = types[rand(types.length)];
      const name = names[rand(names.length)];
      const go =
        kind === 0 && all.length
          ? edit((d) => d.delete(pick().id))
          : kind === 1 && all.length
            ? edit((d) => {
                const r = pick();
                d.set({ ...r, proxied: !r.proxied && (r.type === "A" || r.type === "AAAA") });
              })
            : kind === 2 && all.length
              ? edit((d) => {
                  const r = pick();
                  if (r.type === "A" || r.type === "AAAA" || r.type === "TXT") d.set({ ...r, content: content(r.type), ttl: [1, 60, 300][rand(3)] });
                })
              : kind === 3
                ? () => zones.updateZone(zs, (z) => ({ paused: !z.paused }))
                : kind === 4
                  ? edit((d) => {
                      const at = zs.at(name === "@" ? Z : `${name}.${Z}`);
                      for (const r of at) d.delete(r.id);
                    })
                  : kind === 5 && name !== "@"
                    ? edit((d) => {
                        const at = zs.at(`${name}.${Z}`);
                        for (const r of at) d.delete(r.id);
                        d.set(rec(zs, name, type, content(type), { proxied: type !== "TXT" && rand(2) === 0 }));
                      })
                    : edit((d) => d.set(rec(zs, name, type, content(type), { proxied: type !== "TXT" && rand(3) === 0 })));
      const serial = zs.zone.serial;
      const { removed, added } = await change(go).catch(async (err) => {
        if (zs.zone.serial === serial) return { removed: [], added: [] }; // the edit changed nothing (no records to delete)
        throw err;
      });
      const after = axfrSet(engine, zs);
      const expect = (a: Set<string>, b: Set<string>) =>
        [...a]
          .filter((k) => !b.has(k))
          .map((k) => show(Buffer.from(k, "latin1")))
          .sort();
      assert.deepEqual({ removed, added }, { removed: expect(before, after), added: expect(after, before) }, `seed ${seed}, step ${step}`);
    }
    // The whole journal, applied to the first AXFR, makes the last one.
    const ixfr = journal.incremental(zs, start.serial)!;
    const held = new Set(start.axfr);
    // old SOA, removed..., new SOA, added..., per change
    let removing = false;
    for (const b of ixfr.slice(1, -1)) {
      if (decodeRr(b).type === "SOA") {
        removing = !removing;
        continue;
      }
      const k = b.toString("latin1");
      if (removing) assert.ok(held.delete(k), `seed ${seed}: removes ${show(b)}, which the secondary holds`);
      else (assert.ok(!held.has(k), `seed ${seed}: adds ${show(b)} once`), held.add(k));
    }
    assert.deepEqual([...held].sort(), [...axfrSet(engine, zs)].sort(), `seed ${seed}`);
  });
});
