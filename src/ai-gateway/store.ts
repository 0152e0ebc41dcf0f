import type { GatewayStore } from "./gateways/store.js";
import type { ProviderKeyStore } from "./keys/store.js";
import type { LogStore } from "./logs/store.js";

/**
 * What the AI gateway keeps: gateways and their request logs. Every method is asynchronous so that a database
 * server can implement it (sqlite-store.ts is the SQLite implementation). The proxy does not wait for either on
 * its path: gateway settings and log counts are cached above the store (gateways/directory.ts, logs/counts.ts),
 * and logs are written in batches after the answers (logs/queue.ts).
 */
export interface AiGatewayStores {
  gateways: GatewayStore;
  logs: LogStore;
  keys: ProviderKeyStore;
}
