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

/** The insert's values in INSERT_COLUMNS order (written out: this runs for every logged request). */
export const rowValues = (l: NewLog): unknown[] => [
  l.id,
  l.account_id,
  l.gateway_id,
  l.created_at,
  l.provider,
  l.model,
  l.path,
  l.request_type,
  l.status_code,
  l.success ? 1 : 0,
  l.cached ? 1 : 0,
  l.step,
  l.duration,
  l.tokens_in,
  l.tokens_out,
  l.cached_tokens,
  l.reasoning_tokens,
  l.cost,
  l.cost_note,
  l.custom_cost ? 1 : 0,
  l.metadata ? JSON.stringify(l.metadata) : null,
  l.request_content_type,
  l.response_content_type,
  l.request_size,
  l.response_size,
  l.authenticated ? 1 : 0,
  l.event_id,
  l.request_body,
  l.response_body,
];

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
