// What the stored-key hook (src/ai-gateway/proxy/stored-key.ts) adds to a proxied request, in the three cases the
// proxy meets: the request carries its own key (the hook returns after one header check), it carries none and its
// gateway stores none, and it carries none and gets the gateway's stored key. Also the first request of a gateway,
// which reads and unseals its keys (SQLite, in memory). Reports ns per call and bytes allocated per call (heap
// growth over a run with GC off between samples is noisy: we report the young-generation bytes V8 counts).
// Usage: npm run build && node --expose-gc bench/gateway/stored-key.mjs   (N calls per case, default 2,000,000)
import { loadavg } from "node:os";
import { openDatabase } from "../../dist/core/db/sqlite.js";
import { AI_GATEWAY_MIGRATIONS } from "../../dist/ai-gateway/sqlite-migrations.js";
import { sqliteStores } from "../../dist/ai-gateway/sqlite-store.js";
import { ProviderKeyring } from "../../dist/ai-gateway/keys/keyring.js";
import { useStoredKey } from "../../dist/ai-gateway/proxy/stored-key.js";
import { PROVIDERS } from "../../dist/ai-gateway/providers/catalog.js";

const N = Number(process.env.N ?? 2_000_000);
const db = openDatabase(":memory:", AI_GATEWAY_MIGRATIONS);
const stores = sqliteStores(db);
const settings = { cache_ttl: 0, cache_invalidate_on_update: false, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0 };
const account = "a".repeat(32);
await stores.gateways.create(account, "keyed", settings);
await stores.gateways.create(account, "bare", settings);
await stores.keys.create(account, "keyed", { provider_slug: "openai", alias: "default", default_config: true }, "sk-" + "x".repeat(48), 100);
const keyring = new ProviderKeyring(stores.keys);
const openai = PROVIDERS.find((p) => p.id === "openai");
const exchange = (gateway, headers) => ({ authenticated: true, gateway: { account_id: account, id: gateway }, req: { headers } });

const first = performance.now();
await keyring.load(account, "keyed");
const firstMs = performance.now() - first;
await keyring.load(account, "bare");

/** The floor: a call of a function that looks at the same request and returns. */
const floor = (ex, p, headers) => (ex.authenticated && headers[p.credentialHeaders[0]] !== undefined ? undefined : undefined);
const cases = [
  ["floor (a call that only looks)", exchange("keyed", {}), () => ({ "content-type": "application/json" }), floor],
  ["own key", exchange("keyed", { authorization: "Bearer sk-own" }), () => ({ authorization: "Bearer sk-own", "content-type": "application/json" })],
  ["no key, gateway stores none", exchange("bare", {}), () => ({ "content-type": "application/json" })],
  ["no key, stored key used", exchange("keyed", {}), () => ({ "content-type": "application/json" })],
];
const headerSets = cases.map(([, , make]) => Array.from({ length: 1024 }, make));
for (const [i, [name, ex, , fn = useStoredKey]] of cases.entries()) {
  const sets = headerSets[i];
  for (let j = 0; j < 100_000; j++) fn(ex, openai, sets[j & 1023], keyring); // warm up
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = process.hrtime.bigint();
  for (let j = 0; j < N; j++) fn(ex, openai, sets[j & 1023], keyring);
  const ns = Number(process.hrtime.bigint() - t0) / N;
  const grown = process.memoryUsage().heapUsed - heapBefore;
  console.log(`${name.padEnd(30)} ${ns.toFixed(1)} ns/call   heap grown ${(grown / N).toFixed(2)} B/call (GC may run)`);
}
console.log(`first request of a gateway (read + unseal 1 key): ${(firstMs * 1000).toFixed(0)} µs`);
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await stores.close();
