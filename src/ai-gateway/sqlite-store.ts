import { randomBytes } from "node:crypto";
import type { Db } from "../core/db/sqlite.js";
import { SecretBox } from "../core/secret-box.js";
import { SHIPPED_PRICES_FILE } from "./config.js";
import { SqliteGatewayStore } from "./gateways/sqlite-store.js";
import { SqliteProviderKeyStore } from "./keys/sqlite-store.js";
import { SqliteLogStore } from "./logs/sqlite-store.js";
import { PriceTable } from "./metering/prices.js";
import type { AiGatewayStores } from "./store.js";

/**
 * The AI gateway's stores over its SQLite file (opened with AI_GATEWAY_MIGRATIONS); with `writerThread`, logs are
 * written by a thread of their own (see SqliteLogStore). `close` ends that thread. Provider keys are sealed with `box`
 * (the platform's secrets key; a throwaway key when none is given, for tests that store none to read back later).
 * Logs built from drafts are priced with `prices` (the shipped table when none is given).
 */
export function sqliteStores(
  db: Db,
  opts: { writerThread?: boolean; box?: SecretBox; prices?: PriceTable } = {},
): AiGatewayStores & { close(): Promise<void> } {
  const logs = new SqliteLogStore(db, opts.prices ?? PriceTable.load(SHIPPED_PRICES_FILE), opts);
  const keys = new SqliteProviderKeyStore(db, opts.box ?? SecretBox.fromKey(randomBytes(32)), (fn) => logs.exclusive(fn));
  return { gateways: new SqliteGatewayStore(db, logs), logs, keys, close: () => logs.close() };
}
