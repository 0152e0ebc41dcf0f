import type { LogRecord, NewLog } from "./store.js";

/*
 * A log row as both stores keep it (SQLite's logs table and PostgreSQL's ai_gateway.logs): booleans as 0/1,
 * metadata as JSON text, bodies in the row. Only the SQL around these differs.
 */

/** Columns of a log row as written, in the order of `rowValues`. */
export const INSERT_COLUMNS = [
  "id",
  "account_id",
  "gateway_id",
  "created_at",
  "provider",
  "model",
  "path",
  "request_type",
  "status_code",
  "success",
  "cached",
  "step",
  "duration",
  "tokens_in",
  "tokens_out",
  "cached_tokens",
  "reasoning_tokens",
  "cost",
  "cost_note",
  "custom_cost",
  "metadata",
  "request_content_type",
  "response_content_type",
  "request_size",
  "response_size",
  "authenticated",
  "event_id",
  "request_body",
  "response_body",
] as const;

/**
 * Puts a log's insert values, in INSERT_COLUMNS order, into `out` from `at` on (written out: this runs for every
 * logged request; a multi-row insert fills one array with several logs).
 */
export function putRowValues(l: NewLog, out: unknown[], at: number): void {
  out[at] = l.id;
  out[at + 1] = l.account_id;
  out[at + 2] = l.gateway_id;
  out[at + 3] = l.created_at;
  out[at + 4] = l.provider;
  out[at + 5] = l.model;
  out[at + 6] = l.path;
  out[at + 7] = l.request_type;
  out[at + 8] = l.status_code;
  out[at + 9] = l.success ? 1 : 0;
  out[at + 10] = l.cached ? 1 : 0;
  out[at + 11] = l.step;
  out[at + 12] = l.duration;
  out[at + 13] = l.tokens_in;
  out[at + 14] = l.tokens_out;
  out[at + 15] = l.cached_tokens;
  out[at + 16] = l.reasoning_tokens;
  out[at + 17] = l.cost;
  out[at + 18] = l.cost_note;
  out[at + 19] = l.custom_cost ? 1 : 0;
  out[at + 20] = l.metadata ? JSON.stringify(l.metadata) : null;
  out[at + 21] = l.request_content_type;
  out[at + 22] = l.response_content_type;
  out[at + 23] = l.request_size;
  out[at + 24] = l.response_size;
  out[at + 25] = l.authenticated ? 1 : 0;
  out[at + 26] = l.event_id;
  out[at + 27] = l.request_body;
  out[at + 28] = l.response_body;
}

/** The insert's values in INSERT_COLUMNS order. */
export function rowValues(l: NewLog): unknown[] {
  const out = new Array<unknown>(INSERT_COLUMNS.length);
  putRowValues(l, out, 0);
  return out;
}

/** A log row as read for the API (bodies excluded); booleans are 0/1 and metadata is JSON text. */
export type LogRow = Omit<LogRecord, "success" | "cached" | "custom_cost" | "authenticated" | "metadata"> & {
  success: number;
  cached: number;
  custom_cost: number;
  authenticated: number;
  metadata: string | null;
};

/** The columns the API shows (bodies excluded), for `SELECT ${LOG_COLUMNS} FROM <logs table>`. */
export const LOG_COLUMNS = `id, created_at, provider, model, path, request_type, status_code, success, cached, step, duration, tokens_in, tokens_out,
  cached_tokens, reasoning_tokens, cost, cost_note, custom_cost, metadata, request_content_type, response_content_type, request_size, response_size,
  authenticated, event_id, feedback, score`;

/** Written out in the API's field order. */
export const toRecord = (r: LogRow): LogRecord => ({
  id: r.id,
  created_at: r.created_at,
  provider: r.provider,
  model: r.model,
  path: r.path,
  request_type: r.request_type,
  status_code: r.status_code,
  success: r.success === 1,
  cached: r.cached === 1,
  step: r.step,
  duration: r.duration,
  tokens_in: r.tokens_in,
  tokens_out: r.tokens_out,
  cached_tokens: r.cached_tokens,
  reasoning_tokens: r.reasoning_tokens,
  cost: r.cost,
  cost_note: r.cost_note,
  custom_cost: r.custom_cost === 1,
  request_content_type: r.request_content_type,
  response_content_type: r.response_content_type,
  request_size: r.request_size,
  response_size: r.response_size,
  authenticated: r.authenticated === 1,
  event_id: r.event_id,
  feedback: r.feedback,
  score: r.score,
  metadata: typeof r.metadata === "string" ? JSON.parse(r.metadata) : null,
});

/** Figures over a selection (LogStats), for `SELECT ${STATS_COLUMNS} FROM <logs table> WHERE ...`. */
export const STATS_COLUMNS = `count(*) AS total_count, min(cost) AS min_cost, max(cost) AS max_cost, min(duration) AS min_duration, max(duration) AS max_duration,
  min(tokens_in) AS min_tokens_in, max(tokens_in) AS max_tokens_in, min(tokens_out) AS min_tokens_out, max(tokens_out) AS max_tokens_out,
  min(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS min_total_tokens, max(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS max_total_tokens`;

/** The columns of a stored body and its content type. */
export const BODY_COLUMNS = {
  request: 'request_body AS body, request_content_type AS "contentType"',
  response: 'response_body AS body, response_content_type AS "contentType"',
} as const;
