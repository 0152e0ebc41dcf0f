import { DEFAULT_GATEWAY } from "../gateways/directory.js";
import type { GatewaySettings } from "../gateways/schema.js";
import { SHIPPED_PRICES_FILE } from "../config.js";
import type { LogDraft } from "../logs/store.js";
import { PriceTable } from "../metering/prices.js";
import type { NewLog } from "../logs/store.js";

/** Two account ids for tests of the stores. */
export const A = "a".repeat(32);
export const B = "b".repeat(32);

/** Log number `i` of gateway `g` in account A, written at second `i` (so ids and times sort like `i`). */
export const sampleLog = (i: number, change: Partial<NewLog> = {}): NewLog => ({
  id: `L${String(i).padStart(8, "0")}`,
  account_id: A,
  gateway_id: "g",
  created_at: new Date(1e12 + i * 1000).toISOString(),
  provider: "openai",
  model: "gpt-4o-mini",
  path: "chat/completions",
  request_type: null,
  status_code: 200,
  success: true,
  cached: false,
  step: null,
  duration: 10,
  tokens_in: null,
  tokens_out: null,
  cached_tokens: null,
  reasoning_tokens: null,
  cost: null,
  cost_note: null,
  custom_cost: false,
  metadata: null,
  request_content_type: "application/json",
  response_content_type: null,
  request_size: 1,
  response_size: 0,
  authenticated: false,
  event_id: null,
  request_body: Buffer.from("q"),
  response_body: null,
  limit: null,
  strategy: null,
  ...change,
});

/** Settings of a test gateway: those of a "default" gateway without authentication, with `change` applied. */
export const sampleSettings = (change: Partial<GatewaySettings> = {}): GatewaySettings => ({ ...DEFAULT_GATEWAY, authentication: false, ...change });

/** The draft of log number `i` (as the proxy hands it over): sampleLog's id, gateway and time, nothing read yet. */
export const sampleDraft = (i: number, change: Partial<LogDraft> = {}): LogDraft => {
  // What a log has and its draft has not: found by reading the answer, pricing it, formatting the time.
  const { created_at, model, cached, tokens_in, tokens_out, cached_tokens, reasoning_tokens, cost, cost_note, custom_cost, ...shared } = sampleLog(i);
  return { ...shared, arrived_at: Date.parse(created_at), outcome: "answered", usage: null, custom_cost: null, keep_bodies: true, ...change };
};

/** The shipped price table. */
export const shippedPrices = () => PriceTable.load(SHIPPED_PRICES_FILE);
