// The AI gateway's log writer thread (started by sqlite-log-writer.ts). Batches of logs, or of drafts that are built
// into logs here (usage read from the answers, cost from the price table: logs/draft.ts), arrive and are written
// with a SqliteLogAppender on this thread's own connection to the gateway's SQLite file: the building, the
// inserts and the commit run here, not on the platform's event loop (the WAL checkpoints too, where no checkpoint
// thread took the file over: sqlite-log-writer.ts). The log counts of
// gateways with a limit are kept here too, since only this thread adds logs.
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../../core/db/sqlite.js";
import { buildLogs } from "./draft.js";
import { type LogDraft } from "./store.js";
import { PriceTable } from "../metering/prices.js";
import { SqliteLogAppender } from "./sqlite-appender.js";
import { AI_GATEWAY_MIGRATIONS } from "../sqlite-migrations.js";
import { unpackBatch, type FromLogThread, type LogThreadData, type ToLogThread } from "./sqlite-log-writer.js";
import type { NewLog } from "./store.js";

const port = parentPort!;
const { file, walAutocheckpoint, shared, prices: priceEntries } = workerData as LogThreadData;
const db = openDatabase(file, AI_GATEWAY_MIGRATIONS);
db.pragma(`wal_autocheckpoint = ${Math.trunc(walAutocheckpoint)}`);
const appender = new SqliteLogAppender(db);
const post = (m: FromLogThread) => port.postMessage(m);
/** The table drafts are priced with: the store's (SqliteLogStore), handed over when the thread starts. */
const prices = PriceTable.fromEntries(priceEntries);

/** The logs of an append message: as sent, or built from drafts. */
function logsOf(msg: Extract<ToLogThread, { op: "append" }>): NewLog[] {
  if (msg.kind === "logs") return unpackBatch<NewLog>(msg, shared);
  return buildLogs(unpackBatch<LogDraft>(msg, shared), prices);
}

port.on("message", (msg: ToLogThread) => {
  switch (msg.op) {
    case "append":
      return void Promise.resolve()
        .then(() => appender.append(logsOf(msg)))
        .then(
          (counts) => post({ id: msg.id, counts }),
          (err: Error) => post({ id: msg.id, error: err.message }),
        );
    case "count":
      return void Promise.resolve()
        .then(() => appender.count(msg.accountId, msg.gatewayId))
        .then(
          (count) => post({ id: msg.id, count }),
          (err: Error) => post({ id: msg.id, error: err.message }),
        );
    case "forget":
      return appender.forgetCount(msg.accountId, msg.gatewayId);
    case "close":
      db.close();
      return port.close();
  }
});
