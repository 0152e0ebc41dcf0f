import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, beforeEach, mock, test } from "node:test";
import { FileContentStore } from "../../core/content/file-store.js";
import { createLogger } from "../../core/logger.js";
import { SecretBox } from "../../core/secret-box.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { WORKERS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteWorkersStore } from "../sqlite-store.js";
import type { WorkersStore } from "../store.js";
import { CronClock } from "./clock.js";

const openStore = sqliteStoreFactory(
  WORKERS_MIGRATIONS,
  (db, dir) => new SqliteWorkersStore(db, new FileContentStore(join(dir, "content")), SecretBox.fromKey(randomBytes(32))),
);
const log = createLogger({ level: "silent" });
const at = (iso: string) => Date.parse(iso);

let store: WorkersStore;
let close: () => void | Promise<void>;
beforeEach(async () => {
  ({ store, close } = await openStore());
  const now = new Date().toISOString();
  await store.save(
    {
      accountId: "a".repeat(32),
      name: "ticker",
      versionId: "v1",
      etag: "e",
      mainModule: "index.js",
      compatibilityDate: "2024-09-01",
      compatibilityFlags: [],
      bindings: [],
      modules: [],
      createdOn: now,
      modifiedOn: now,
    },
    [],
  );
  await store.setSchedules("a".repeat(32), "ticker", ["* * * * *"], 10);
});
afterEach(async () => {
  mock.timers.reset();
  await close();
});

/** A clock whose runs are recorded (the tick each was for) instead of calling workerd. */
function recordingClock(): { clock: CronClock; ran: string[] } {
  const ran: string[] = [];
  const clock = new CronClock(
    store,
    async (s, tick) => {
      ran.push(`${s.cron} @ ${new Date(tick).toISOString()}`);
      return { outcome: "ok", noRetry: false };
    },
    log,
  );
  return { clock, ran };
}

/** Lets the clock's promise chains (store calls, runs) settle. */
const settle = () => new Promise<void>((r) => setImmediate(r));

test("each tick runs once, at its minute, with the tick as scheduledTime; ticks missed during a stall are not replayed", async () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: at("2026-01-01T00:00:30Z") });
  const { clock, ran } = recordingClock();
  await clock.start();
  mock.timers.tick(29_999);
  await settle();
  assert.deepEqual(ran, [], "not before its time");
  mock.timers.tick(1);
  await settle();
  assert.deepEqual(ran, ["* * * * * @ 2026-01-01T00:01:00.000Z"]);
  // The process stalls from 00:01:00 to 00:05:30: the ticks of 00:02 … 00:05 are missed, not run one after another.
  mock.timers.setTime(at("2026-01-01T00:05:30Z"));
  mock.timers.tick(0);
  await settle();
  mock.timers.tick(30_000);
  await settle();
  assert.deepEqual(ran, ["* * * * * @ 2026-01-01T00:01:00.000Z", "* * * * * @ 2026-01-01T00:06:00.000Z"]);
  clock.stop();
});

test("a tick another clock on the same store already ran (a restart within the tick) is not run again; removed triggers stop", async () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: at("2026-01-01T00:00:30Z") });
  const first = recordingClock();
  const second = recordingClock();
  await first.clock.start();
  await second.clock.start();
  mock.timers.tick(30_000);
  await settle();
  assert.equal(first.ran.length + second.ran.length, 1, `one run of the 00:01 tick: ${JSON.stringify([first.ran, second.ran])}`);
  second.clock.stop();

  await store.setSchedules("a".repeat(32), "ticker", [], 10);
  await first.clock.reload();
  mock.timers.tick(120_000);
  await settle();
  assert.equal(first.ran.length + second.ran.length, 1, "no run after the trigger was removed");
  first.clock.stop();
});
