#!/usr/bin/env node
// What event notification rules cost an object write, on the SQLite store alone (no HTTP): small puts into a bucket
// without rules, into one whose rules match no key written (the in-memory match only), and into one whose rule
// matches every put (a message row in the put's transaction). Rounds alternate between the buckets so that machine
// load hits each alike. Usage: node bench/r2/notifications.mjs [puts per round=2000] [rounds=5]
// Needs a build (npm run build). Not part of the test suite.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbSmallContentStore } from "../../dist/core/content/db-small-store.js";
import { FileContentStore } from "../../dist/core/content/file-store.js";
import { openDatabase } from "../../dist/core/db/sqlite.js";
import { newRules } from "../../dist/r2/notifications/rules.js";
import { R2_SMALL_BODIES, r2Migrations } from "../../dist/r2/sqlite-migrations.js";
import { SqliteR2Store } from "../../dist/r2/sqlite-store.js";

const perRound = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 5);
const dir = mkdtempSync(join(tmpdir(), "r2-notify-bench-"));
try {
  const db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  const store = new SqliteR2Store(db, new DbSmallContentStore(db, R2_SMALL_BODIES, new FileContentStore(join(dir, "content"))));
  const buckets = { "no rules": "plain", "rules, none match": "filtered", "rule matches every put": "notified" };
  for (const name of Object.values(buckets)) await store.createBucket("acc", name);
  await store.addNotificationRules({ accountId: "acc", bucketName: "filtered" }, newRules("q", [{ actions: ["PutObject"], prefix: "never/" }]));
  await store.addNotificationRules({ accountId: "acc", bucketName: "notified" }, newRules("q", [{ actions: ["PutObject"] }]));
  const body = Buffer.alloc(1024, "x");
  const times = Object.fromEntries(Object.keys(buckets).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [label, bucketName] of Object.entries(buckets)) {
      const ref = { accountId: "acc", bucketName };
      const start = process.hrtime.bigint();
      for (let i = 0; i < perRound; i++) await store.put(ref, `k/${i % 500}`, body);
      times[label].push(Number(process.hrtime.bigint() - start) / 1e3 / perRound);
      // The relay's work, outside the timing: the outbox is emptied as it would be.
      for (let m = await store.leaseNotifications(1000, 60_000, Date.now()); m.length > 0; m = await store.leaseNotifications(1000, 60_000, Date.now()))
        await store.ackNotifications(m.map((x) => x.id));
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [label, xs] of Object.entries(times))
    console.log(`${label.padEnd(24)} ${median(xs).toFixed(1)} µs a put (median of ${rounds} rounds of ${perRound})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
