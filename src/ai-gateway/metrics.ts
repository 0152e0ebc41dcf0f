import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../core/metrics/registry.js";
import type { GatewayRequest } from "./analytics.js";

/** Models with a label of their own per provider: the first this many distinct ones a node sees since it started. */
export const MODELS_PER_PROVIDER = 20;
/** The label of every later model of a provider, and of a provider that is not in the catalog. */
export const OTHER = "(other)";
/** The label of a request whose model is not known (neither the answer nor the request named one). */
export const UNKNOWN_MODEL = "(unknown)";

/** The cells of one provider and model, in a plain array (indexes below). */
const OK = 0;
const ERRORED = 1;
const CACHE_HIT = 2;
const CACHE_MISS = 3;
const TOKENS_IN = 4;
const TOKENS_OUT = 5;
const COST = 6;
const CELLS = 7;

/** The counts of one provider, by model: the first MODELS_PER_PROVIDER models by name, the others together. */
class ProviderCounts {
  readonly models = new Map<string, Float64Array>();
  readonly others = new Float64Array(CELLS);

  cellsOf(model: string): Float64Array {
    const cells = this.models.get(model);
    if (cells !== undefined) return cells;
    if (this.models.size >= MODELS_PER_PROVIDER) return this.others;
    const fresh = new Float64Array(CELLS);
    this.models.set(model, fresh);
    return fresh;
  }

  /** Each model's label and cells (the others' only once some were counted). */
  *labelled(): Generator<[string, Float64Array]> {
    for (const [model, cells] of this.models) yield [model === "" ? UNKNOWN_MODEL : model, cells];
    if (this.others.some((n) => n !== 0)) yield [OTHER, this.others];
  }
}

/**
 * The AI gateway's Prometheus metrics: requests, tokens, cost and cache lookups by provider and model. Each request
 * is counted from the event the analytics rollups already get as it ends (analytics.ts: its usage read and priced
 * once, on the event loop), into plain arrays: a map lookup by provider and by model and a few additions per
 * request; the arrays are copied into Prometheus' counters only when scraped.
 *
 * Labels stay bounded: `provider` is one of the catalog's (anything else `(other)`), `model` one of the first
 * MODELS_PER_PROVIDER models of that provider the node saw since it started (a model name comes from tenants'
 * requests and answers), every later one `(other)`.
 */
export class GatewayMetrics {
  private readonly providers = new Map<string, ProviderCounts>();
  private readonly unknownProviders = new ProviderCounts();

  constructor(registry: Registry, providerIds: readonly string[]) {
    for (const id of providerIds) this.providers.set(id, new ProviderCounts());
    const each = (f: (labels: { provider: string; model: string }, cells: Float64Array) => void) => {
      for (const [provider, counts] of this.providers) for (const [model, cells] of counts.labelled()) f({ provider, model }, cells);
      for (const [model, cells] of this.unknownProviders.labelled()) f({ provider: OTHER, model }, cells);
    };
    new Counter({
      name: `${METRIC_PREFIX}ai_gateway_requests_total`,
      help: "Requests through AI gateways answered by a provider or the gateway's cache, by provider, model and outcome (ok; error: a 4xx/5xx answer or the client gone)",
      labelNames: ["provider", "model", "outcome"],
      registers: [registry],
      collect() {
        this.reset();
        each((l, c) => {
          if (c[OK] !== 0) this.inc({ ...l, outcome: "ok" }, c[OK]);
          if (c[ERRORED] !== 0) this.inc({ ...l, outcome: "error" }, c[ERRORED]);
        });
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}ai_gateway_tokens_total`,
      help: "Tokens of the answers providers gave through AI gateways (not those from the cache), by provider, model and direction (input: the prompt; output: the completion)",
      labelNames: ["provider", "model", "direction"],
      registers: [registry],
      collect() {
        this.reset();
        each((l, c) => {
          if (c[TOKENS_IN] !== 0) this.inc({ ...l, direction: "input" }, c[TOKENS_IN]);
          if (c[TOKENS_OUT] !== 0) this.inc({ ...l, direction: "output" }, c[TOKENS_OUT]);
        });
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}ai_gateway_cost_dollars_total`,
      help: "Cost in US dollars of the answers providers gave through AI gateways, as the logs price them (the price table, or a request's custom cost), by provider and model",
      labelNames: ["provider", "model"],
      registers: [registry],
      collect() {
        this.reset();
        each((l, c) => {
          if (c[COST] !== 0) this.inc(l, c[COST]);
        });
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}ai_gateway_cache_lookups_total`,
      help: "Lookups in AI gateways' response caches (requests of gateways with caching on), by provider, model and result (hit, miss)",
      labelNames: ["provider", "model", "result"],
      registers: [registry],
      collect() {
        this.reset();
        each((l, c) => {
          if (c[CACHE_HIT] !== 0) this.inc({ ...l, result: "hit" }, c[CACHE_HIT]);
          if (c[CACHE_MISS] !== 0) this.inc({ ...l, result: "miss" }, c[CACHE_MISS]);
        });
      },
    });
  }

  /** Counts one request as it ends (on the proxy's path: lookups and additions only). */
  count(e: GatewayRequest): void {
    const cells = (this.providers.get(e.provider) ?? this.unknownProviders).cellsOf(e.model);
    cells[e.errored ? ERRORED : OK]++;
    if (e.cached) cells[CACHE_HIT]++;
    else {
      if (e.cacheLookup) cells[CACHE_MISS]++;
      cells[TOKENS_IN] += e.tokensIn;
      cells[TOKENS_OUT] += e.tokensOut;
      cells[COST] += e.cost;
    }
  }
}
