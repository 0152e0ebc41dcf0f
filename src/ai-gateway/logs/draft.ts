import { parseUserJson } from "../../core/http/json-input.js";
import type { PriceTable } from "../metering/prices.js";
import { costOf, type CustomCost } from "../metering/cost.js";
import { emptyUsage, usageOfJson, type Usage } from "../metering/usage.js";
import type { LogDraft, NewLog } from "./store.js";

/** The `model` of a JSON request body, when it has one (for logs when the answer names none). */
export function modelOfRequest(body: Buffer | null): string | null {
  if (!body || body.length > 1 << 20) return null;
  try {
    const m = (parseUserJson(body) as { model?: unknown }).model;
    return typeof m === "string" ? m : null;
  } catch {
    return null;
  }
}

const COST_NOTES = { cached: "answered from the cache", aborted: "the client went away before the answer ended" } as const;

/** The log of a draft: usage read from the answer, the model (from the request when the answer names none), the cost. */
export function buildLog(d: LogDraft, prices: PriceTable): NewLog {
  const cached = d.outcome === "cached";
  let usage: Usage;
  if (cached) usage = { ...emptyUsage(), tokensIn: 0, tokensOut: 0 };
  else if (d.usage) usage = d.usage;
  else usage = d.response_body ? usageOfJson(d.response_body) : emptyUsage();
  // The usage object is this draft's own (read from its answer, or made above): it takes the model as it is.
  const model = (usage.model ??= modelOfRequest(d.request_body));
  const cost = cached ? { cost: 0, note: null, custom: false } : costOf(usage, prices, d.custom_cost ?? undefined);
  return {
    id: d.id,
    account_id: d.account_id,
    gateway_id: d.gateway_id,
    created_at: new Date(d.arrived_at).toISOString(),
    provider: d.provider,
    model,
    path: d.path,
    request_type: d.request_type,
    status_code: d.status_code,
    success: d.success,
    cached,
    step: d.step,
    duration: d.duration,
    tokens_in: usage.tokensIn,
    tokens_out: usage.tokensOut,
    cached_tokens: usage.cachedTokens,
    reasoning_tokens: usage.reasoningTokens,
    cost: cost.cost,
    cost_note: d.outcome === "answered" ? cost.note : COST_NOTES[d.outcome],
    custom_cost: cost.custom,
    metadata: d.metadata,
    request_content_type: d.request_content_type,
    response_content_type: d.response_content_type,
    request_size: d.request_size,
    response_size: d.response_size,
    authenticated: d.authenticated,
    event_id: d.event_id,
    request_body: d.keep_bodies ? d.request_body : null,
    response_body: d.keep_bodies ? d.response_body : null,
    limit: d.limit,
    strategy: d.strategy,
  };
}

export const buildLogs = (drafts: readonly LogDraft[], prices: PriceTable): NewLog[] => drafts.map((d) => buildLog(d, prices));
