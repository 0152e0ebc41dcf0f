// The AI gateway's log writer thread (started by sqlite-log-writer.ts). Batches of logs arrive here and are
// written with SqliteLogStore.append on this thread's own connection to the gateway's SQLite file: the inserts,
// the commit and the WAL checkpoints run here, not on the platform's event loop. The log counts of gateways with a
// limit are kept here too, since only this thread adds logs.
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../core/db/sqlite.js";
import { SqliteLogStore } from "./sqlite-log-store.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { unpackLogs, type FromLogThread, type ToLogThread } from "./sqlite-log-writer.js";

const port = parentPort!;
const db = openDatabase((workerData as { file: string }).file, AI_GATEWAY_MIGRATIONS);
const store = new SqliteLogStore(db);
const post = (m: FromLogThread) => port.postMessage(m);

port.on("message", (msg: ToLogThread) => {
  switch (msg.op) {
    case "append":
      return void store.append(unpackLogs(msg.logs, msg.bodies)).then(
        (counts) => post({ id: msg.id, counts }),
        (err: Error) => post({ id: msg.id, error: err.message }),
      );
    case "count":
      return void store.count(msg.accountId, msg.gatewayId).then(
        (count) => post({ id: msg.id, count }),
        (err: Error) => post({ id: msg.id, error: err.message }),
      );
    case "forget":
      return store.forgetCount(msg.accountId, msg.gatewayId);
    case "close":
      db.close();
      return port.close();
  }
});
