import { randomBytes } from "node:crypto";
import type { Bus } from "../core/cluster/bus.js";
import type { Postgres } from "../core/db/postgres.js";
import { SecretBox } from "../core/secret-box.js";
import { SHIPPED_PRICES_FILE } from "./config.js";
import { PgGatewayStore } from "./gateways/pg-store.js";
import { PgProviderKeyStore } from "./keys/pg-store.js";
import { PgLogStore } from "./logs/pg-store.js";
import { PriceTable } from "./metering/prices.js";
import type { AiGatewayStores } from "./store.js";

/**
 * The AI gateway's stores on PostgreSQL (schema `ai_gateway`, AI_GATEWAY_PG_MIGRATIONS), shared by every node. With
 * a bus, each change of a gateway (and each delete of logs) is announced inside its transaction, so every node drops
 * what it caches of that gateway when the change commits. Provider keys are sealed with `box` (the platform's
 * secrets key, the same on every node; a throwaway key when none is given, for tests). Logs built from drafts are
 * priced with `prices` (the shipped table when none is given).
 */
export function pgStores(
  pg: Postgres,
  bus?: Bus,
  box: SecretBox = SecretBox.fromKey(randomBytes(32)),
  prices: PriceTable = PriceTable.load(SHIPPED_PRICES_FILE),
): AiGatewayStores {
  const logs = new PgLogStore(pg, prices, bus);
  return { gateways: new PgGatewayStore(pg, logs, bus), logs, keys: new PgProviderKeyStore(pg, box, bus) };
}
