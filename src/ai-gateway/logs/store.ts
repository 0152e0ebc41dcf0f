import type { CustomCost } from "../metering/cost.js";
import type { Usage } from "../metering/usage.js";

export type LogStrategy = "STOP_INSERTING" | "DELETE_OLDEST";
export type LogMetadata = Record<string, string | number | boolean>;

/** What a log records of one forwarded request (what the proxy writes and the API shows alike). */
interface LogFields {
  id: string;
  created_at: string;
  provider: string;
  model: string | null;
  path: string;
  request_type: string | null;
  status_code: number;
  success: boolean;
  cached: boolean;
  step: number | null;
  duration: number;
  tokens_in: number | null;
  tokens_out: number | null;
  cached_tokens: number | null;
  reasoning_tokens: number | null;
  cost: number | null;
  cost_note: string | null;
  custom_cost: boolean;
  metadata: LogMetadata | null;
  request_content_type: string | null;
  response_content_type: string | null;
  request_size: number;
  response_size: number;
  authenticated: boolean;
  event_id: string | null;
}

/** One forwarded request, as it is written. Bodies are null when payload collection is off. */
export interface NewLog extends LogFields {
  account_id: string;
  gateway_id: string;
  request_body: Buffer | null;
  response_body: Buffer | null;
  /** The gateway's log_management limit and strategy when the request was made. */
  limit: number | null;
  strategy: LogStrategy | null;
}

/**
 * What the proxy knows of an exchange once its answer is out, as it has it: the bodies as they passed, times as
 * numbers, nothing parsed, priced or formatted. The log is built from it later, where the batch is written (the
 * SQLite store's writer thread, or beside the PostgreSQL write), with `buildLog`: so the event loop that serves
 * requests only hands over what it already holds.
 */
export type LogDraft = Pick<
  NewLog,
  | "id"
  | "account_id"
  | "gateway_id"
  | "provider"
  | "path"
  | "request_type"
  | "step"
  | "status_code"
  | "success"
  | "duration"
  | "metadata"
  | "request_content_type"
  | "response_content_type"
  | "request_size"
  | "response_size"
  | "authenticated"
  | "event_id"
  | "limit"
  | "strategy"
> & {
  /** Date.now() when the request arrived. */
  arrived_at: number;
  /**
   * "answered" (usage from the answer), "cached" (answered from the cache: no tokens, no cost) or "aborted" (the
   * client went away before the answer ended; usage as far as it came).
   */
  outcome: "answered" | "cached" | "aborted";
  /** Usage already read (a stream's, read as it passed), or null: read from response_body, a JSON answer. */
  usage: Usage | null;
  custom_cost: CustomCost | null;
  /** The bodies as they passed (null: over the capture's cap, or not captured); stored only with `keep_bodies`. */
  request_body: Buffer | null;
  response_body: Buffer | null;
  /** gw-aig-collect-log-payload: false keeps the bodies out of the log (they are still read for usage and model). */
  keep_bodies: boolean;
};

/**
 * A stored log as the API shows it (its bodies are read on their own), with what callers added later (PATCH).
 * The API shows the fields in the order the store returns them: as LogFields lists them, but metadata last.
 */
export interface LogRecord extends LogFields {
  feedback: number | null;
  score: number | null;
}

/** Fields a log can be filtered on: `tokens` is tokens_in + tokens_out; `metadata.key`/`metadata.value` match any entry. */
export const LOG_FILTER_FIELDS = [
  "id",
  "created_at",
  "request_content_type",
  "response_content_type",
  "request_type",
  "success",
  "cached",
  "provider",
  "model",
  "cost",
  "tokens",
  "tokens_in",
  "tokens_out",
  "duration",
  "feedback",
  "event_id",
  "status_code",
  "authentication",
  "metadata.key",
  "metadata.value",
] as const;
export type LogField = (typeof LOG_FILTER_FIELDS)[number];

/**
 * How a condition compares: `eq` any of the values (null matches an absent value), `neq` none of them, `contains`
 * the field's text contains any of them, `lt`/`gt`/`lte`/`gte` compare with the first value. On `metadata.key`
 * and `metadata.value`, every operator but `neq` and `contains` means `eq`.
 */
export type LogOperator = "eq" | "neq" | "contains" | "lt" | "gt" | "lte" | "gte";
export type LogValue = string | number | boolean | null;

export interface LogCondition {
  field: LogField;
  operator: LogOperator;
  values: LogValue[];
}

/** Which logs of a gateway: those that meet every condition and, with `search`, whose id, model, provider or path contains it. */
export interface LogFilter {
  conditions: LogCondition[];
  search?: string;
}

export const LOG_ORDER_FIELDS = [
  "created_at",
  "provider",
  "model",
  "success",
  "cached",
  "cost",
  "tokens_in",
  "tokens_out",
  "duration",
  "feedback",
  "status_code",
] as const;

/** The order of a selection; logs that tie come in the order they were written (in the same direction). */
export interface LogOrder {
  by: (typeof LOG_ORDER_FIELDS)[number];
  direction: "asc" | "desc";
}

export interface LogQuery {
  filter: LogFilter;
  order: LogOrder;
  /** At most this many (all when absent), after skipping `offset`. */
  limit?: number;
  offset?: number;
}

/** Figures over every log a filter selects (not only the page shown). */
export interface LogStats {
  total_count: number;
  min_cost: number | null;
  max_cost: number | null;
  min_duration: number | null;
  max_duration: number | null;
  min_tokens_in: number | null;
  max_tokens_in: number | null;
  min_tokens_out: number | null;
  max_tokens_out: number | null;
  min_total_tokens: number | null;
  max_total_tokens: number | null;
}

/** What a caller may change of a stored log; a field left out stays as it is. */
export interface LogPatch {
  feedback?: -1 | 0 | 1 | null;
  score?: number | null;
  metadata?: LogMetadata | null;
}

/** How many logs a gateway holds. */
export interface LogCount {
  account_id: string;
  gateway_id: string;
  count: number;
}

export interface LogStore {
  /**
   * Writes logs in one atomic batch, in order, applying each log's gateway limit: with `STOP_INSERTING` (or no
   * strategy) a log past the limit is dropped, with `DELETE_OLDEST` the gateway's oldest logs make room. Returns the
   * count of every gateway of the batch whose logs have a limit.
   */
  append(batch: readonly NewLog[]): Promise<LogCount[]>;
  /**
   * Builds the logs of these drafts (logs/draft.ts: usage, model, cost, priced with the table the store was given)
   * and appends them as `append` does. Where they are built is the store's choice: the SQLite store builds its
   * writer thread's batches on that thread.
   */
  appendDrafts(batch: readonly LogDraft[]): Promise<LogCount[]>;
  count(accountId: string, gatewayId: string): Promise<number>;
  /** One page of a gateway's logs in the query's order, and the stats of everything the filter selects. */
  list(accountId: string, gatewayId: string, query: LogQuery): Promise<{ logs: LogRecord[]; stats: LogStats }>;
  get(accountId: string, gatewayId: string, logId: string): Promise<LogRecord | undefined>;
  /** A stored body with the log's content type for it (body null when it was not kept); undefined when there is no such log. */
  body(
    accountId: string,
    gatewayId: string,
    logId: string,
    which: "request" | "response",
  ): Promise<{ body: Buffer | null; contentType: string | null } | undefined>;
  /** False when there is no such log. */
  patch(accountId: string, gatewayId: string, logId: string, patch: LogPatch): Promise<boolean>;
  /** Deletes the logs the query selects (the first `limit` of them in its order, when given); returns how many. */
  delete(accountId: string, gatewayId: string, query: LogQuery): Promise<number>;
}
