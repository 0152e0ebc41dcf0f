import type { ObservabilitySetting } from "./settings.js";
import type { EventQuery, ValuesQuery, KeysQuery } from "./query.js";

/** One kept event: an invocation (`cf-worker-event`) or a line it logged (`cf-worker`), as its row holds it. */
export interface LogEvent {
  /** Given by the store when the event is kept; the cursor of a query's next page. */
  id: string;
  accountId: string;
  script: string;
  requestId: string;
  /** ms since the epoch. */
  timestamp: number;
  type: "cf-worker-event" | "cf-worker";
  level: string;
  message: string;
  error?: string;
  outcome: string;
  statusCode?: number;
  /** Wall time of the invocation, ms. */
  duration?: number;
  cpuTime?: number;
  method?: string;
  url?: string;
  /** `GET /path`, or the cron of a scheduled event. */
  trigger: string;
  /** The kind of invocation: fetch, scheduled, queue… */
  origin: string;
  /** The event's `source` and `$workers` as the query API answers them. */
  body: { source: unknown; workers: Record<string, unknown> };
}

export type NewLogEvent = Omit<LogEvent, "id">;

/** What one account may keep (`--workers-logs-max-rows`, `--workers-logs-max-bytes`); its oldest events go first. */
export interface AccountCap {
  rows: number;
  bytes: number;
}

export interface KeyInfo {
  key: string;
  type: "string" | "number" | "boolean";
  lastSeenAt: number;
}

/**
 * Workers Logs: each Worker's `observability` setting, and the events kept of the Worker's invocations. Every backend
 * keeps these promises (store.contract.ts):
 *
 * - Events are an account's: every read names the account and sees nothing of another's.
 * - `append` keeps an account within its cap: past `rows` or `bytes` its oldest events are removed in the same write.
 * - `prune` removes the events older than a time, of every account.
 * - Queries read at most `limit` events and one timeframe; filters are checked before they reach the store (query.ts).
 */
export interface LogsStore {
  /** Every Worker's setting that is not off (loaded at start into the service's memory). */
  settings(): Promise<{ accountId: string; script: string; setting: ObservabilitySetting }[]>;
  setting(accountId: string, script: string): Promise<ObservabilitySetting | undefined>;
  /** Sets a Worker's setting; `undefined` removes it (the Worker was deleted, or turned it off). */
  setSetting(accountId: string, script: string, setting: ObservabilitySetting | undefined): Promise<void>;

  append(events: readonly NewLogEvent[], cap: AccountCap): Promise<void>;
  /** Removes the events older than `before` (ms); how many. */
  prune(before: number): Promise<number>;
  /** The newest events matching, newest first, after the cursor; with how many match in all. */
  events(accountId: string, q: EventQuery): Promise<{ events: LogEvent[]; count: number }>;
  /** Every event of the newest `q.limit` invocations matching (an invocation matches when one of its events does). */
  invocations(accountId: string, q: EventQuery): Promise<LogEvent[]>;
  keys(accountId: string, q: KeysQuery): Promise<KeyInfo[]>;
  values(accountId: string, q: ValuesQuery): Promise<(string | number)[]>;
  /** How many rows and bytes an account keeps. */
  usage(accountId: string): Promise<{ rows: number; bytes: number }>;
}
