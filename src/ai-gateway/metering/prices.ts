import { readFileSync } from "node:fs";
import { UserError } from "../../core/errors.js";

/** A model's list price in USD per million tokens. */
interface Price {
  input: number;
  output: number;
}

/**
 * Model prices, for the cost estimate of each log. The table ships as data (prices.json beside this file); an
 * operator's file (`--ai-gateway-prices`) of the same shape is read over it: its entries replace or add models,
 * and an entry of `null` removes one (its requests are then logged with cost null and the reason).
 *
 *   {"unit": "USD per million tokens", "models": {"gpt-4o": {"input": 2.5, "output": 10}, "my-llama": null}}
 */
export class PriceTable {
  /** A Map: model names come from providers' answers and clients' bodies. */
  private constructor(private readonly prices: ReadonlyMap<string, Price>) {}

  /** Reads the shipped table, then `overrides` (an operator's file) over it. A malformed file is a UserError naming it. */
  static load(shippedFile: string, overridesFile?: string): PriceTable {
    const prices = new Map<string, Price>();
    readPriceFile(shippedFile, prices, "the shipped price table");
    if (overridesFile) readPriceFile(overridesFile, prices, `--ai-gateway-prices ${overridesFile}`);
    return new PriceTable(prices);
  }

  /** The table as [model, price] pairs, to make the same table elsewhere (the log writer thread) with `fromEntries`. */
  entries(): [string, Price][] {
    return [...this.prices];
  }

  static fromEntries(entries: Iterable<[string, Price]>): PriceTable {
    return new PriceTable(new Map(entries));
  }

  /** The price of a model: by its exact name, else by the longest listed name it starts with (dated versions). */
  of(model: string): Price | undefined {
    const name = model.replace(/^.*\//, "");
    const exact = this.prices.get(name);
    if (exact) return exact;
    let best: string | undefined;
    for (const k of this.prices.keys()) if (name.startsWith(k) && (!best || k.length > best.length)) best = k;
    return best ? this.prices.get(best) : undefined;
  }
}

const UNIT = "USD per million tokens";
const isPrice = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/** Applies one price file to `into`; `label` names the file in errors. */
function readPriceFile(file: string, into: Map<string, Price>, label: string): void {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new UserError(`${label}: cannot read it as JSON (${(err as Error).message})`);
  }
  const fail = (why: string) =>
    new UserError(`${label}: ${why}`, `expected {"unit": "${UNIT}", "models": {"<model>": {"input": <number>, "output": <number>} | null}}`);
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw fail("not a JSON object");
  const { unit, models } = doc as { unit?: unknown; models?: unknown };
  if (unit !== undefined && unit !== UNIT) throw fail(`unit must be "${UNIT}"`);
  if (!models || typeof models !== "object" || Array.isArray(models)) throw fail('"models" must be an object of model names');
  // JSON.parse keeps a key such as `__proto__` as an own property; entries() lists it like any other name.
  for (const [model, price] of Object.entries(models)) {
    if (price === null) {
      into.delete(model);
      continue;
    }
    const { input, output } = (price ?? {}) as { input?: unknown; output?: unknown };
    if (typeof price !== "object" || !isPrice(input) || !isPrice(output))
      throw fail(`models["${model}"] must be {"input": <number ≥ 0>, "output": <number ≥ 0>} or null`);
    into.set(model, { input, output });
  }
}
