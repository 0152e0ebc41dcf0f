import type { Usage } from "./usage.js";

/**
 * Public list prices in USD per million tokens [input, output] for common models. Costs are estimates,
 * as the hosted gateway's are; a model not listed gets cost null with the reason recorded, never a silent 0.
 */
const PRICES = new Map<string, [number, number]>(
  Object.entries({
    "gpt-4o": [2.5, 10],
    "gpt-4o-mini": [0.15, 0.6],
    "gpt-4.1": [2, 8],
    "gpt-4.1-mini": [0.4, 1.6],
    "gpt-4.1-nano": [0.1, 0.4],
    "o3-mini": [1.1, 4.4],
    "o4-mini": [1.1, 4.4],
    "claude-3-5-haiku": [0.8, 4],
    "claude-3-haiku": [0.25, 1.25],
    "claude-3-5-sonnet": [3, 15],
    "claude-sonnet-4": [3, 15],
    "claude-opus-4": [15, 75],
    "gemini-2.0-flash": [0.1, 0.4],
    "gemini-2.5-flash": [0.3, 2.5],
    "gemini-2.5-pro": [1.25, 10],
    "mistral-large-latest": [2, 6],
    "mistral-small-latest": [0.1, 0.3],
    "deepseek-chat": [0.27, 1.1],
    "llama-3.1-8b-instant": [0.05, 0.08],
  }),
);

export interface CustomCost {
  per_token_in: number;
  per_token_out: number;
}

export interface Cost {
  cost: number | null;
  /** Why cost is null (or "custom" when it came from gw-aig-custom-cost). */
  note: string | null;
  custom: boolean;
}

/** Finds a price by exact model name, then by the longest listed name the model starts with (dated versions). */
function priceOf(model: string): [number, number] | undefined {
  const name = model.replace(/^.*\//, "");
  const exact = PRICES.get(name);
  if (exact) return exact;
  let best: string | undefined;
  for (const k of PRICES.keys()) if (name.startsWith(k) && (!best || k.length > best.length)) best = k;
  return best ? PRICES.get(best) : undefined;
}

export function costOf(u: Usage, custom?: CustomCost): Cost {
  if (u.tokensIn === null && u.tokensOut === null) {
    return { cost: null, note: "the provider reported no token usage (OpenAI streams report it only with stream_options.include_usage)", custom: !!custom };
  }
  const tin = u.tokensIn ?? 0;
  const tout = u.tokensOut ?? 0;
  if (custom) return { cost: tin * custom.per_token_in + tout * custom.per_token_out, note: null, custom: true };
  if (!u.model) return { cost: null, note: "the model is unknown", custom: false };
  const p = priceOf(u.model);
  if (!p) return { cost: null, note: `no price is known for model ${u.model}; send gw-aig-custom-cost to set one`, custom: false };
  return { cost: (tin * p[0] + tout * p[1]) / 1e6, note: null, custom: false };
}
