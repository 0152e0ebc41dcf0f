import type { LogEvent, NewLogEvent } from "./store.js";

/** An event as both backends keep it (PostgreSQL answers BIGINT and DOUBLE columns as strings or numbers). */
export interface EventRow {
  seq: number | string;
  account_id: string;
  script: string;
  request_id: string;
  ts: number | string;
  event_type: string;
  level: string;
  message: string;
  error: string | null;
  outcome: string;
  status: number | null;
  duration: number | string | null;
  cpu: number | string | null;
  method: string | null;
  url: string | null;
  trigger_name: string;
  origin: string;
  body: string;
}

export const EVENT_COLUMNS =
  "seq, account_id, script, request_id, ts, event_type, level, message, error, outcome, status, duration, cpu, method, url, trigger_name, origin, body";
export const INSERT_COLUMNS =
  "account_id, script, request_id, ts, event_type, level, message, error, outcome, status, duration, cpu, method, url, trigger_name, origin, bytes, body";

/** The values of INSERT_COLUMNS for one event, and its size (what the account's byte cap counts). */
export function insertValues(e: NewLogEvent): { values: unknown[]; bytes: number } {
  const body = JSON.stringify(e.body);
  const bytes = Buffer.byteLength(body) + Buffer.byteLength(e.message) + (e.url?.length ?? 0) + (e.error?.length ?? 0) + 128;
  return {
    bytes,
    values: [
      e.accountId,
      e.script,
      e.requestId,
      e.timestamp,
      e.type,
      e.level,
      e.message,
      e.error ?? null,
      e.outcome,
      e.statusCode ?? null,
      e.duration ?? null,
      e.cpuTime ?? null,
      e.method ?? null,
      e.url ?? null,
      e.trigger,
      e.origin,
      bytes,
      body,
    ],
  };
}

const num = (v: number | string | null) => (v === null ? undefined : Number(v));

export function toEvent(r: EventRow): LogEvent {
  return {
    id: String(r.seq),
    accountId: r.account_id,
    script: r.script,
    requestId: r.request_id,
    timestamp: Number(r.ts),
    type: r.event_type as LogEvent["type"],
    level: r.level,
    message: r.message,
    ...(r.error !== null && { error: r.error }),
    outcome: r.outcome,
    ...(r.status !== null && { statusCode: Number(r.status) }),
    ...(r.duration !== null && { duration: num(r.duration) }),
    ...(r.cpu !== null && { cpuTime: num(r.cpu) }),
    ...(r.method !== null && { method: r.method }),
    ...(r.url !== null && { url: r.url }),
    trigger: r.trigger_name,
    origin: r.origin,
    body: JSON.parse(r.body) as LogEvent["body"],
  };
}

/** Most rows a keys or values query reads (the newest of its timeframe), and a count counts. */
export const SCAN_ROWS = 100_000;
