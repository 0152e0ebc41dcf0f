#!/usr/bin/env node
// In one process, on a zone of --records records (one name each, ZoneService on SQLite in a temporary directory):
//  1. IXFR journal: the zone is watched (as after its first transfer out); the time TransferJournal.changed takes for
//     one single-record edit (--edits of them: add, replace, delete in turn), and the snapshot walk alone
//     (snapshotContent, which every change and every AXFR takes).
//  2. The same zone signed (DNSSEC, ECDSA P-256): an AXFR consumed as the TCP listener does (8 messages per turn of the
//     event loop, setImmediate between turns, and since p11 no more once a turn has taken --turn-ms, 10 by default;
//     0: no such limit, as the listener was before); the longest turn, the longest event-loop delay seen meanwhile
//     (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and the whole transfer's time.
// Usage: npm run build && node bench/dns/journal-axfr-turns.mjs [--records 200000] [--edits 5] [--dist DIR] [--only journal|signed]
// --dist: another build's dist directory (for a "before" number: the same script against main's build).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import * as packet from "dns-packet";

const args = process.argv.slice(2);
const arg = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const RECORDS = Number(arg("records", 200_000));
const EDITS = Number(arg("edits", 5));
const ONLY = arg("only", undefined);
const TURN_MS = Number(arg("turn-ms", 10));
const DIST = resolve(arg("dist", new URL("../../dist", import.meta.url).pathname));
const load = (p) => import(pathToFileURL(join(DIST, p)).href);

const [{ openDatabase }, { SecretBox }, { createLogger }, cfgMod, { DNS_MIGRATIONS }, { SqliteDnsStore }, { ZoneService }, zsMod] = await Promise.all([
  load("core/db/sqlite.js"),
  load("core/secret-box.js"),
  load("core/logger.js"),
  load("dns/config.js"),
  load("dns/sqlite-migrations.js"),
  load("dns/sqlite-store.js"),
  load("dns/zones/zone-service.js"),
  load("dns/zones/zone-state.js"),
]);
const [{ AnswerEngine }, { axfrMessages, snapshotContent }, { TransferJournal }, { SqliteTransferStore }, { TRANSFER_MIGRATIONS }] = await Promise.all([
  load("dns/nameserver/answer.js"),
  load("dns/nameserver/axfr.js"),
  load("dns/transfers/journal.js"),
  load("dns/transfers/sqlite-store.js"),
  load("dns/transfers/sqlite-migrations.js"),
]);
const [{ DnssecService }, { answerSigning }, { SqliteDnssecStore }, { DNSSEC_MIGRATIONS }] = await Promise.all([
  load("dns/dnssec/dnssec-service.js"),
  load("dns/dnssec/answer-signing.js"),
  load("dns/dnssec/sqlite-store.js"),
  load("dns/dnssec/sqlite-migrations.js"),
]);

const ZONE = "bench-journal.example";
const dir = mkdtempSync(join(tmpdir(), "bench-journal-"));
const box = SecretBox.fromKey(randomBytes(32));
const cfg = cfgMod.readDnsConfig(Object.fromEntries(Object.entries(cfgMod.serveOptions).map(([k, o]) => [k, o.default])));
const ms = (a, b) => Number(b - a) / 1e6;
const stats = (xs) => ({ min: Math.min(...xs).toFixed(1), median: [...xs].sort((a, b) => a - b)[xs.length >> 1].toFixed(1), max: Math.max(...xs).toFixed(1) });
const record = (zs, name, content, type = "A") => ({
  id: zsMod.newId(),
  zone_id: zs.zone.id,
  name,
  type,
  content,
  data: null,
  priority: null,
  ttl: 300,
  proxied: false,
  comment: null,
  tags: [],
  settings: {},
  created_on: zsMod.now(),
  modified_on: zsMod.now(),
  comment_modified_on: null,
  tags_modified_on: null,
});

const out = { dist: DIST, records: RECORDS, turn_ms: TURN_MS, loadavg_start: loadavg().map((l) => l.toFixed(2)) };
try {
  const zones = new ZoneService(new SqliteDnsStore(openDatabase(join(dir, "dns.sqlite"), DNS_MIGRATIONS)));
  await zones.load();
  const dnssec = new DnssecService(
    new SqliteDnssecStore(openDatabase(join(dir, "dnssec.sqlite"), DNSSEC_MIGRATIONS), box),
    { rolloverWaitSeconds: 3600, distributed: false },
    () => {},
  );
  await dnssec.load();
  const engine = new AnswerEngine(zones, cfg, answerSigning(zones, dnssec));
  const journal = new TransferJournal(
    new SqliteTransferStore(openDatabase(join(dir, "xfr.sqlite"), TRANSFER_MIGRATIONS), box),
    engine,
    createLogger({ level: "silent" }),
  );
  const changedMs = [];
  zones.onChange((zs) => {
    const t = process.hrtime.bigint();
    journal.changed(zs);
    changedMs.push(ms(t, process.hrtime.bigint()));
  });
  const zs = await zones.createZone("a".repeat(32), ZONE);
  const t0 = process.hrtime.bigint();
  await zones.editRecords(zs, (d) => {
    for (let i = 0; i < RECORDS; i++) d.set(record(zs, `h${i}.${ZONE}`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
  });
  out.load_s = (ms(t0, process.hrtime.bigint()) / 1000).toFixed(1);

  // 1. The journal.
  if (ONLY !== "signed") {
    const walk = [];
    for (let i = 0; i < 5; i++) {
      const t = process.hrtime.bigint();
      snapshotContent(engine, zs);
      walk.push(ms(t, process.hrtime.bigint()));
    }
    out.snapshot_walk_ms = stats(walk);
    journal.watch(zs);
    changedMs.length = 0;
    for (let e = 0; e < EDITS; e++) {
      const n = e % 3;
      const target = zs.at(`h${e * 7}.${ZONE}`)[0];
      await zones.editRecords(zs, (d) =>
        n === 0 ? d.set(record(zs, `new${e}.${ZONE}`, "192.0.2.1")) : n === 1 ? d.set({ ...target, content: "192.0.2.2" }) : d.delete(target.id),
      );
    }
    out.journal_changed_ms = stats(changedMs);
    await journal.flushed();
  }
  if (ONLY === "journal") throw Object.assign(new Error("done"), { done: true });

  // 2. A signed AXFR, consumed 8 messages a turn.
  await dnssec.enable(zs);
  const q = packet.decode(packet.encode({ id: 1, type: "query", questions: [{ name: ZONE, type: "AXFR" }] }));
  const h = monitorEventLoopDelay({ resolution: 1 });
  await new Promise((r) => setTimeout(r, 50));
  h.enable();
  const turns = [];
  let messages = 0;
  let rrs = 0;
  const start = process.hrtime.bigint();
  await new Promise((done) => {
    let it;
    const turn = () => {
      const t = process.hrtime.bigint();
      it ??= axfrMessages(engine, zs, q)[Symbol.iterator]();
      for (let n = 0; n < 8 && (n === 0 || !TURN_MS || ms(t, process.hrtime.bigint()) < TURN_MS); n++) {
        const next = it.next();
        if (next.done) {
          turns.push(ms(t, process.hrtime.bigint()));
          return done();
        }
        messages++;
        rrs += next.value.readUInt16BE(6);
      }
      turns.push(ms(t, process.hrtime.bigint()));
      setImmediate(turn);
    };
    setImmediate(turn);
  });
  h.disable();
  out.signed_axfr = {
    records_sent: rrs,
    messages,
    total_s: (ms(start, process.hrtime.bigint()) / 1000).toFixed(1),
    first_turn_ms: turns[0].toFixed(1),
    longest_turn_ms: Math.max(...turns).toFixed(1),
    longest_loop_delay_ms: (h.max / 1e6).toFixed(1),
  };
} catch (err) {
  if (!err.done) throw err;
} finally {
  out.loadavg_end = loadavg().map((l) => l.toFixed(2));
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(out, null, 2));
