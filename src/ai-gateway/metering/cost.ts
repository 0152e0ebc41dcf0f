import type { PriceTable } from "./prices.js";
import type { Usage } from "./usage.js";

/** Prices a request sets for itself (gw-aig-custom-cost), in USD per token. */
export interface CustomCost {
  per_token_in: number;
  per_token_out: number;
}

interface Cost {
  cost: number | null;
  /** Why cost is null (or "custom" when it came from gw-aig-custom-cost). */
  note: string | null;
  custom: boolean;
}

/**
 * The estimated cost of a request from its token counts, as the hosted gateway estimates it: a model without a
 * known price gets cost null with the reason recorded, never a silent 0.
 */
export function costOf(u: Usage, prices: PriceTable, custom?: CustomCost): Cost {
  if (u.tokensIn === null && u.tokensOut === null) {
    return { cost: null, note: "the provider reported no token usage (OpenAI streams report it only with stream_options.include_usage)", custom: !!custom };
  }
  const tin = u.tokensIn ?? 0;
  const tout = u.tokensOut ?? 0;
  if (custom) return { cost: tin * custom.per_token_in + tout * custom.per_token_out, note: null, custom: true };
  if (!u.model) return { cost: null, note: "the model is unknown", custom: false };
  const p = prices.of(u.model);
  if (!p) return { cost: null, note: `no price is known for model ${u.model}; send gw-aig-custom-cost to set one`, custom: false };
  return { cost: (tin * p.input + tout * p.output) / 1e6, note: null, custom: false };
}
