#!/usr/bin/env node
// What the R2 storage numbers (GraphQL r2StorageAdaptiveGroups, `wrangler r2 bucket info`) cost on SQLite, with a
// bucket of N objects (default 1,000,000): the one-time migration that counts existing buckets, the count as it was
// (a pass over the bucket's rows: the event loop held meanwhile) and as it is now (bucket_usage, kept by triggers),
// and what the triggers add to a small put (rounds alternate between a database with and one without them, so
// machine load hits both alike). Usage: node bench/r2/usage-count.mjs [objects=1000000] [puts per round=2000] [rounds=5]
// Needs a build (npm run build). Not part of the test suite.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbSmallContentStore } from "../../dist/core/content/db-small-store.js";
import { FileContentStore } from "../../dist/core/content/file-store.js";
import { openDatabase } from "../../dist/core/db/sqlite.js";
import { R2_SMALL_BODIES, r2Migrations } from "../../dist/r2/sqlite-migrations.js";
import { SqliteR2Store } from "../../dist/r2/sqlite-store.js";

const objects = Number(process.argv[2] ?? 1_000_000);
const perRound = Number(process.argv[3] ?? 2000);
const rounds = Number(process.argv[4] ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

// The count as bucketUsage made it before bucket_usage.
const OLD_COUNT = `SELECT b.name AS bucket_name,
   (SELECT count(*) FROM objects o WHERE o.bucket_id = b.id) AS object_count,
   (SELECT coalesce(sum(o.size), 0) FROM objects o WHERE o.bucket_id = b.id) AS payload_size,
   (SELECT coalesce(sum(length(CAST(o.http AS BLOB)) + length(CAST(o.custom AS BLOB))), 0) FROM objects o WHERE o.bucket_id = b.id) AS metadata_size,
   (SELECT count(*) FROM uploads u WHERE u.bucket_id = b.id) AS upload_count
 FROM buckets b WHERE b.account_id = ? ORDER BY b.name`;

const dir = mkdtempSync(join(tmpdir(), "r2-usage-bench-"));
try {
  const file = join(dir, "r2.sqlite");
  // The objects are written before the usage migration, as an existing database would hold them.
  const before = openDatabase(file, r2Migrations.slice(0, -1));
  before.prepare("INSERT INTO buckets (account_id, name, created_at, location, storage_class) VALUES ('acc', 'big', '', 'auto', 'Standard')").run();
  const insert = before.prepare(
    `INSERT INTO objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments)
     VALUES (1, ?, 'v', 1024, 'etag', 0, '{"contentType":"text/plain"}', '{}', '{}', 'Standard', '[]')`,
  );
  const fill = before.transaction((from, to) => {
    for (let i = from; i < to; i++) insert.run(`objects/${String(i).padStart(8, "0")}`);
  });
  for (let i = 0; i < objects; i += 100_000) fill(i, Math.min(objects, i + 100_000));
  before.close();

  let t0 = process.hrtime.bigint();
  const db = openDatabase(file, r2Migrations);
  console.log(`migration counting ${objects} objects: ${ms(t0).toFixed(0)} ms (once)`);
  const store = new SqliteR2Store(db, new DbSmallContentStore(db, R2_SMALL_BODIES, new FileContentStore(join(dir, "content"))));
  const oldCount = db.prepare(OLD_COUNT);
  const oldTimes = [];
  const newTimes = [];
  for (let r = 0; r < rounds; r++) {
    t0 = process.hrtime.bigint();
    const old = oldCount.all("acc");
    oldTimes.push(ms(t0));
    t0 = process.hrtime.bigint();
    const now = await store.bucketUsage("acc");
    newTimes.push(ms(t0));
    if (old[0].object_count !== now[0].objectCount || old[0].payload_size !== now[0].payloadSize || old[0].metadata_size !== now[0].metadataSize) {
      throw new Error(`the counts differ: ${JSON.stringify(old)} ${JSON.stringify(now)}`);
    }
  }
  console.log(
    `usage of a bucket of ${objects} objects: before (a pass over the rows) median ${median(oldTimes).toFixed(1)} ms, max ${Math.max(...oldTimes).toFixed(1)} ms`,
  );
  console.log(
    `                                   now (bucket_usage)         median ${median(newTimes).toFixed(3)} ms, max ${Math.max(...newTimes).toFixed(3)} ms`,
  );

  // Puts with and without the triggers, into the same bucket of the same database: the triggers are dropped for
  // the rounds without them and made again after (from their own SQL).
  const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all();
  const body = Buffer.alloc(1024, "x");
  const times = { "with the counts": [], without: [] };
  for (let r = 0; r < rounds; r++) {
    for (const label of Object.keys(times)) {
      if (label === "without") for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
      t0 = process.hrtime.bigint();
      for (let i = 0; i < perRound; i++) await store.put({ accountId: "acc", bucketName: "big" }, `new/${label}/${i % 500}`, body);
      times[label].push((ms(t0) * 1000) / perRound);
      if (label === "without") for (const { sql } of triggers) db.exec(sql);
    }
  }
  for (const [label, xs] of Object.entries(times))
    console.log(`put of 1 KiB ${label}: median ${median(xs).toFixed(1)} µs a put (rounds: ${xs.map((x) => x.toFixed(0)).join(", ")})`);
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
