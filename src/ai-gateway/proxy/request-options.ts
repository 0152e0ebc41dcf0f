import type { IncomingHttpHeaders } from "node:http";
import { parseUserJson } from "../../core/http/json-input.js";
import { AigErrors } from "../errors.js";
import type { CustomCost } from "../metering/cost.js";

/** Our headers use `gw-aig-`; clients written for the hosted gateway send `cf-aig-`, accepted as an alias. */
function aigHeader(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[`gw-aig-${name}`] ?? h[`cf-aig-${name}`];
  return Array.isArray(v) ? v[0] : v;
}

/** True for headers that are meant for the gateway and must never reach the provider. */
export const isGatewayHeader = (name: string) =>
  name.startsWith("gw-aig-") || name.startsWith("cf-aig-") || name === "cf-cache-ttl" || name === "cf-skip-cache";

/** The gateway token of a request: `gw-aig-authorization` (the documented header) or `gw-aig-token` (SDK default header). */
export function gatewayToken(h: IncomingHttpHeaders): string | undefined {
  const raw = aigHeader(h, "authorization") ?? aigHeader(h, "token");
  if (!raw) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(raw);
  return m ? m[1] : raw.trim() || undefined;
}

/** Per-request settings from headers; they override the gateway's settings. */
export interface RequestOptions {
  cacheTtl?: number;
  skipCache: boolean;
  cacheKey?: string;
  metadata: Record<string, string | number | boolean> | null;
  collectLog?: boolean;
  collectPayload: boolean;
  timeoutMs?: number;
  maxAttempts?: number;
  retryDelay?: number;
  backoff?: "constant" | "linear" | "exponential";
  customCost?: CustomCost;
  eventId: string | null;
}

const bad = AigErrors.badHeader;

function int(h: IncomingHttpHeaders, name: string, min: number, max: number): number | undefined {
  const v = aigHeader(h, name) ?? (name === "cache-ttl" ? (h["cf-cache-ttl"] as string | undefined) : undefined);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || n < min || n > max) throw bad(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

function bool(h: IncomingHttpHeaders, name: string, legacy?: string): boolean | undefined {
  const v = aigHeader(h, name) ?? (legacy ? (h[legacy] as string | undefined) : undefined);
  if (v === undefined) return undefined;
  if (v === "true") return true;
  if (v === "false") return false;
  throw bad(name, "must be true or false");
}

function json(h: IncomingHttpHeaders, name: string): unknown {
  const v = aigHeader(h, name);
  if (v === undefined) return undefined;
  try {
    return parseUserJson(v);
  } catch (e) {
    throw bad(name, `must be a JSON object (${(e as Error).message})`);
  }
}

const NO_OPTIONS: RequestOptions = Object.freeze({ skipCache: false, metadata: null, collectPayload: true, eventId: null });

/** True when a request carries any gateway header other than its token (most do not: a quick check first). */
function hasOptions(h: IncomingHttpHeaders): boolean {
  for (const k in h) {
    if ((k.startsWith("gw-aig-") || k.startsWith("cf-aig-") || k.startsWith("cf-")) && !/^(gw|cf)-aig-(authorization|token)$/.test(k)) return true;
  }
  return false;
}

/** Parses the gateway's request headers; malformed values are a 400 naming the header. */
export function readRequestOptions(h: IncomingHttpHeaders): RequestOptions {
  if (!hasOptions(h)) return NO_OPTIONS;
  const meta = json(h, "metadata");
  let metadata: RequestOptions["metadata"] = null;
  if (meta !== undefined) {
    if (!meta || typeof meta !== "object" || Array.isArray(meta)) throw bad("metadata", "must be a JSON object");
    const entries = Object.entries(meta as Record<string, unknown>);
    for (const [k, v] of entries) {
      if (!["string", "number", "boolean"].includes(typeof v)) throw bad("metadata", `value of "${k}" must be a string, number or boolean`);
    }
    // The hosted gateway keeps the first five entries; so do we.
    metadata = Object.fromEntries(entries.slice(0, 5)) as RequestOptions["metadata"];
  }
  const cc = json(h, "custom-cost") as Record<string, unknown> | undefined;
  let customCost: CustomCost | undefined;
  if (cc !== undefined) {
    if (!cc || typeof cc.per_token_in !== "number" || typeof cc.per_token_out !== "number" || cc.per_token_in < 0 || cc.per_token_out < 0) {
      throw bad("custom-cost", 'must be {"per_token_in": <number>, "per_token_out": <number>}');
    }
    customCost = { per_token_in: cc.per_token_in, per_token_out: cc.per_token_out };
  }
  const backoff = aigHeader(h, "backoff");
  if (backoff !== undefined && !["constant", "linear", "exponential"].includes(backoff)) throw bad("backoff", "must be constant, linear or exponential");
  const collectLog = bool(h, "collect-log");
  return {
    cacheTtl: int(h, "cache-ttl", 0, 31 * 24 * 3600),
    skipCache: bool(h, "skip-cache", "cf-skip-cache") ?? false,
    cacheKey: aigHeader(h, "cache-key") || undefined,
    metadata,
    collectLog,
    collectPayload: bool(h, "collect-log-payload") ?? true,
    timeoutMs: int(h, "request-timeout", 1, 3_600_000),
    maxAttempts: int(h, "max-attempts", 1, 5),
    retryDelay: int(h, "retry-delay", 0, 5_000),
    backoff: backoff as RequestOptions["backoff"],
    customCost,
    eventId: aigHeader(h, "event-id") ?? null,
  };
}
