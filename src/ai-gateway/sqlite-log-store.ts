import type { Db } from "../core/db/sqlite.js";
import { logOrderBy, logWhere } from "./sqlite-log-filter.js";
import type { LogCount, LogPatch, LogQuery, LogRecord, LogStats, LogStore, NewLog } from "./store.js";

/** Columns of a log row as written, in the order of `rowValues`. */
const INSERT_COLUMNS = [
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

/** A log row as read for the API (bodies excluded); booleans are 0/1 and metadata is JSON text. */
type Row = Omit<LogRecord, "success" | "cached" | "custom_cost" | "authenticated" | "metadata"> & {
  success: number;
  cached: number;
  custom_cost: number;
  authenticated: number;
  metadata: string | null;
};

const SELECT = `SELECT id, created_at, provider, model, path, request_type, status_code, success, cached, step, duration, tokens_in, tokens_out,
  cached_tokens, reasoning_tokens, cost, cost_note, custom_cost, metadata, request_content_type, response_content_type, request_size, response_size,
  authenticated, event_id, feedback, score FROM logs`;

/** Written out in the API's field order. */
const toRecord = (r: Row): LogRecord => ({
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

const STATS = `SELECT count(*) AS total_count, min(cost) AS min_cost, max(cost) AS max_cost, min(duration) AS min_duration, max(duration) AS max_duration,
  min(tokens_in) AS min_tokens_in, max(tokens_in) AS max_tokens_in, min(tokens_out) AS min_tokens_out, max(tokens_out) AS max_tokens_out,
  min(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS min_total_tokens, max(coalesce(tokens_in,0)+coalesce(tokens_out,0)) AS max_total_tokens
  FROM logs`;

const BODY_COLUMNS = {
  request: "request_body AS body, request_content_type AS contentType",
  response: "response_body AS body, response_content_type AS contentType",
} as const;

/**
 * Logs in the `logs` table, bodies in their row. Log counts of gateways with a limit are counted once and then
 * kept up to date here, so a batch does not count a large table again; only this store writes the table.
 */
export class SqliteLogStore implements LogStore {
  private readonly counts = new Map<string, number>();
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare(`INSERT INTO logs (${INSERT_COLUMNS.join(", ")}) VALUES (${INSERT_COLUMNS.map(() => "?").join(", ")})`),
      count: db.prepare("SELECT count(*) AS n FROM logs WHERE account_id = ? AND gateway_id = ?"),
      trim: db.prepare("DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE account_id = ? AND gateway_id = ? ORDER BY seq LIMIT ?)"),
      get: db.prepare(`${SELECT} WHERE account_id = ? AND gateway_id = ? AND id = ?`),
      exists: db.prepare("SELECT 1 FROM logs WHERE account_id = ? AND gateway_id = ? AND id = ?"),
      deleteAll: db.prepare("DELETE FROM logs WHERE account_id = ? AND gateway_id = ?"),
    };
  }

  private countOf(accountId: string, gatewayId: string, key: string): number {
    let n = this.counts.get(key);
    if (n === undefined) {
      n = (this.q.count.get(accountId, gatewayId) as { n: number }).n;
      this.counts.set(key, n);
    }
    return n;
  }

  async append(batch: readonly NewLog[]): Promise<LogCount[]> {
    const limited = new Map<string, NewLog>();
    try {
      this.db.transaction(() => {
        for (const l of batch) {
          const key = `${l.account_id}/${l.gateway_id}`;
          if (l.limit === null) {
            this.q.insert.run(rowValues(l));
            const n = this.counts.get(key);
            if (n !== undefined) this.counts.set(key, n + 1);
            continue;
          }
          limited.set(key, l);
          const n = this.countOf(l.account_id, l.gateway_id, key);
          if (l.strategy !== "DELETE_OLDEST" && n >= l.limit) continue;
          this.q.insert.run(rowValues(l));
          let after = n + 1;
          if (after > l.limit) {
            this.q.trim.run(l.account_id, l.gateway_id, after - l.limit);
            after = l.limit;
          }
          this.counts.set(key, after);
        }
      })();
    } catch (err) {
      // The counts moved with rows that were rolled back.
      this.counts.clear();
      throw err;
    }
    return [...limited].map(([key, l]) => ({ account_id: l.account_id, gateway_id: l.gateway_id, count: this.counts.get(key)! }));
  }

  async count(accountId: string, gatewayId: string): Promise<number> {
    return this.countOf(accountId, gatewayId, `${accountId}/${gatewayId}`);
  }

  async list(accountId: string, gatewayId: string, query: LogQuery): Promise<{ logs: LogRecord[]; stats: LogStats }> {
    const where = logWhere(accountId, gatewayId, query.filter);
    const rows = this.db
      .prepare(`${SELECT} WHERE ${where.sql} ORDER BY ${logOrderBy(query.order)} LIMIT ? OFFSET ?`)
      .all(...where.args, query.limit ?? -1, query.offset ?? 0) as Row[];
    const stats = this.db.prepare(`${STATS} WHERE ${where.sql}`).get(...where.args) as LogStats;
    return { logs: rows.map(toRecord), stats };
  }

  async get(accountId: string, gatewayId: string, logId: string): Promise<LogRecord | undefined> {
    const row = this.q.get.get(accountId, gatewayId, logId) as Row | undefined;
    return row && toRecord(row);
  }

  async body(accountId: string, gatewayId: string, logId: string, which: "request" | "response") {
    return this.db.prepare(`SELECT ${BODY_COLUMNS[which]} FROM logs WHERE account_id = ? AND gateway_id = ? AND id = ?`).get(accountId, gatewayId, logId) as
      { body: Buffer | null; contentType: string | null } | undefined;
  }

  async patch(accountId: string, gatewayId: string, logId: string, patch: LogPatch): Promise<boolean> {
    const sets: string[] = [];
    const args: unknown[] = [];
    if (patch.feedback !== undefined) (sets.push("feedback = ?"), args.push(patch.feedback));
    if (patch.score !== undefined) (sets.push("score = ?"), args.push(patch.score));
    if (patch.metadata !== undefined) (sets.push("metadata = ?"), args.push(patch.metadata === null ? null : JSON.stringify(patch.metadata)));
    if (!sets.length) return !!this.q.exists.get(accountId, gatewayId, logId);
    const r = this.db
      .prepare(`UPDATE logs SET ${sets.join(", ")} WHERE account_id = ? AND gateway_id = ? AND id = ?`)
      .run(...args, accountId, gatewayId, logId);
    return r.changes > 0;
  }

  async delete(accountId: string, gatewayId: string, query: LogQuery): Promise<number> {
    const where = logWhere(accountId, gatewayId, query.filter);
    // SQLite takes a LIMIT up to 2^63 - 1 (-1: none); a safe integer always fits.
    const r = this.db
      .prepare(`DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE ${where.sql} ORDER BY ${logOrderBy(query.order)} LIMIT ?)`)
      .run(...where.args, query.limit ?? -1);
    this.counts.delete(`${accountId}/${gatewayId}`);
    return r.changes;
  }

  /** Deletes every log of a gateway (inside the gateway store's transaction that deletes the gateway). */
  deleteAllOf(accountId: string, gatewayId: string): void {
    this.q.deleteAll.run(accountId, gatewayId);
    this.counts.delete(`${accountId}/${gatewayId}`);
  }
}
