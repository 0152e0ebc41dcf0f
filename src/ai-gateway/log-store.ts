import type { Db } from "../core/db/sqlite.js";

/** One forwarded request, as it is written. Bodies are null when payload collection is off. */
export interface NewLog {
  id: string;
  account_id: string;
  gateway_id: string;
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
  metadata: Record<string, string | number | boolean> | null;
  request_content_type: string | null;
  response_content_type: string | null;
  request_size: number;
  response_size: number;
  authenticated: boolean;
  event_id: string | null;
  request_body: Buffer | null;
  response_body: Buffer | null;
  /** The gateway's log_management limit and strategy when the request was made. */
  limit: number | null;
  strategy: "STOP_INSERTING" | "DELETE_OLDEST" | null;
}

/** Columns a log is shown with (the bodies are read only by their own endpoints). */
export const VIEW_COLUMNS = [
  "id",
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
  "feedback",
  "score",
] as const;

const COLUMNS = [
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

/** The insert's values in COLUMNS order (written out: this runs for every logged request). */
const rowValues = (l: NewLog): unknown[] => [
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

/** Writes logs in batches (one transaction each) and enforces each gateway's log_management limit. */
export class LogWriter {
  private readonly counts = new Map<string, number>();
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare(`INSERT INTO logs (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`),
      count: db.prepare("SELECT count(*) AS n FROM logs WHERE account_id = ? AND gateway_id = ?"),
      trim: db.prepare("DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE account_id = ? AND gateway_id = ? ORDER BY seq LIMIT ?)"),
    };
  }

  /** Number of stored logs of a gateway, counted once and then kept up to date in memory. */
  count(accountId: string, gatewayId: string): number {
    const key = `${accountId}/${gatewayId}`;
    let n = this.counts.get(key);
    if (n === undefined) {
      n = (this.q.count.get(accountId, gatewayId) as { n: number }).n;
      this.counts.set(key, n);
    }
    return n;
  }

  /** True when a STOP_INSERTING gateway is full, so the proxy neither promises nor writes a log. */
  full(accountId: string, gatewayId: string, limit: number | null, strategy: string | null): boolean {
    return limit !== null && strategy !== "DELETE_OLDEST" && this.count(accountId, gatewayId) >= limit;
  }

  /** Forgets counts after logs were deleted through the API. */
  recount(accountId: string, gatewayId: string): void {
    this.counts.delete(`${accountId}/${gatewayId}`);
  }

  writeBatch(batch: readonly NewLog[]): void {
    this.db.transaction(() => {
      for (const l of batch) {
        const key = `${l.account_id}/${l.gateway_id}`;
        const n = this.count(l.account_id, l.gateway_id);
        if (l.limit !== null && l.strategy !== "DELETE_OLDEST" && n >= l.limit) continue;
        this.q.insert.run(rowValues(l));
        let after = n + 1;
        if (l.limit !== null && after > l.limit) {
          this.q.trim.run(l.account_id, l.gateway_id, after - l.limit);
          after = l.limit;
        }
        this.counts.set(key, after);
      }
    })();
  }
}
