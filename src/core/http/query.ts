import { CoreErrors } from "../errors.js";

/**
 * The named query parameters as single strings. Fastify reads `?a=1&a=2` as an array; a route that takes one value
 * would otherwise hand that array on (to SQLite, to a string method) and fail with a 500. A parameter given more
 * than once has no single meaning, so it is refused.
 */
export function singleQueryValues<N extends string>(query: unknown, names: readonly N[], code: number): Partial<Record<N, string>> {
  const q = (query ?? {}) as Record<string, unknown>;
  const out: Partial<Record<N, string>> = {};
  for (const name of names) {
    const v = q[name];
    if (v === undefined) continue;
    if (typeof v !== "string") throw CoreErrors.invalidInput(`${name} must be given once`, { code, pointer: name });
    out[name] = v;
  }
  return out;
}
