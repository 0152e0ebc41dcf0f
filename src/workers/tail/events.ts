import { z } from "zod";

/**
 * Tail events in the hosted `trace-v1` format (what `wrangler tail` reads): one per invocation of a script, built
 * by workerd for its tail worker (tail-worker.ts) and completed here.
 */
export interface TraceEvent {
  outcome: string;
  scriptName: string | null;
  eventTimestamp: number | null;
  logs: { message: unknown[]; level: string; timestamp: number }[];
  exceptions: { name: string; message: string; timestamp: number; stack?: string }[];
  event: Record<string, unknown> | null;
  entrypoint?: string;
  [field: string]: unknown;
}

/** The prefix of the entry module's own entrypoints (entry-module.ts): `__edge_handlers_<tag>`, `__edge_scheduled_<tag>`. */
const INTERNAL = "__edge_";

/**
 * What a tail shows of one event workerd reported for `script`, or undefined for the platform's own invocations
 * (asking a new version for its handlers). A cron tick reaches the script through the entry module's scheduled
 * entrypoint as a request; it is shown as the scheduled event it is (`cron`, `scheduledTime`). The `cf` workerd
 * records is that of the edge's own connection, not the client's (which is `cf-connecting-ip`), so it is dropped.
 */
export function traceEventOf(raw: unknown, script: string): TraceEvent | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const e = raw as TraceEvent;
  const entrypoint = typeof e.entrypoint === "string" ? e.entrypoint : undefined;
  const event = e.event as { request?: { url?: string; cf?: unknown } } | null;
  if (entrypoint?.startsWith(INTERNAL)) {
    if (!entrypoint.startsWith(`${INTERNAL}scheduled_`) || typeof event?.request?.url !== "string") return undefined;
    const q = new URL(event.request.url).searchParams;
    return { ...e, entrypoint: undefined, scriptName: script, event: { cron: q.get("cron") ?? "", scheduledTime: Number(q.get("time")) } };
  }
  if (event?.request) delete event.request.cf;
  return { ...e, scriptName: script, logs: Array.isArray(e.logs) ? e.logs : [], exceptions: Array.isArray(e.exceptions) ? e.exceptions : [] };
}

/** The filters of a tail session, as `wrangler tail` sends them (`{"filters": [{"outcome": [...]}, ...]}`). */
const filter = z.union([
  z.strictObject({ outcome: z.array(z.enum(["ok", "canceled", "exception", "exceededCpu", "exceededMemory", "unknown"])).max(10) }),
  z.strictObject({ method: z.array(z.string().min(1).max(32)).max(20) }),
  z.strictObject({ query: z.string().min(1).max(1024) }),
  z.strictObject({ header: z.strictObject({ key: z.string().min(1).max(256), query: z.string().max(1024).optional() }) }),
  z.strictObject({ client_ip: z.array(z.string().min(1).max(64)).max(20) }),
  z.strictObject({ sampling_rate: z.number().gt(0).lte(1) }),
]);
export const tailFiltersBody = z.object({ filters: z.array(filter).max(20).default([]) }).strict();
export type TailFilter = z.infer<typeof filter>;

/** A request's header `key` (case-insensitive) from a trace event. */
function header(e: TraceEvent, key: string): string | undefined {
  const headers = (e.event as { request?: { headers?: Record<string, unknown> } } | null)?.request?.headers;
  if (!headers || typeof headers !== "object") return undefined;
  const wanted = key.toLowerCase();
  for (const k of Object.keys(headers)) if (k.toLowerCase() === wanted) return String(headers[k]);
  return undefined;
}

/** The text of a log line (its values joined as console.log prints them) or an exception, for `query`. */
const logText = (l: TraceEvent["logs"][number]) =>
  (Array.isArray(l.message) ? l.message : [l.message]).map((m) => (typeof m === "string" ? m : JSON.stringify(m))).join(" ");

/**
 * Whether one event passes every filter (within one filter, any listed value matches). `self` in `client_ip` was
 * replaced by the address of whoever opened the session (tailFilters). Events without a request (a cron tick, a
 * Durable Object's WebSocket event) fail the request filters.
 */
export function passes(e: TraceEvent, filters: readonly TailFilter[], random: () => number = Math.random): boolean {
  const request = (e.event as { request?: { method?: string } } | null)?.request;
  return filters.every((f) => {
    if ("outcome" in f) return (f.outcome as string[]).includes(e.outcome);
    if ("method" in f) return request !== undefined && f.method.some((m) => m.toUpperCase() === String(request.method).toUpperCase());
    if ("query" in f) return e.logs.some((l) => logText(l).includes(f.query)) || e.exceptions.some((x) => `${x.name}: ${x.message}`.includes(f.query));
    if ("header" in f) {
      const value = header(e, f.header.key);
      return value !== undefined && (f.header.query === undefined || value.includes(f.header.query));
    }
    if ("client_ip" in f) return f.client_ip.includes(header(e, "cf-connecting-ip") ?? "");
    return random() < f.sampling_rate;
  });
}

/** The filters of a session opened by `requester` (its address stands for `self` in `client_ip`). */
export function tailFilters(body: z.infer<typeof tailFiltersBody>, requester: string): TailFilter[] {
  return body.filters.map((f) => ("client_ip" in f ? { client_ip: f.client_ip.map((ip) => (ip === "self" ? requester : ip)) } : f));
}
