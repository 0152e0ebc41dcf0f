import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres, Transaction } from "../../core/db/postgres.js";
import { BODY_COLUMNS, INSERT_COLUMNS, LOG_COLUMNS, rowValues, STATS_COLUMNS, toRecord, type LogRow } from "./rows.js";
import { buildLogs } from "./draft.js";
import { type LogDraft } from "./store.js";
import { AIG_BUS_AREA, writeNotice } from "../notices.js";
import { pgLogOrderBy, pgLogWhere } from "./pg-filter.js";
import type { PriceTable } from "../metering/prices.js";
import type { LogCount, LogPatch, LogQuery, LogRecord, LogStats, LogStore, NewLog } from "./store.js";

/** The PostgreSQL array type of each of INSERT_COLUMNS, in order (a batch is inserted as one array per column). */
const INSERT_TYPES: Record<(typeof INSERT_COLUMNS)[number], string> = {
  id: "text",
  account_id: "text",
  gateway_id: "text",
  created_at: "text",
  provider: "text",
  model: "text",
  path: "text",
  request_type: "text",
  status_code: "int4",
  success: "int2",
  cached: "int2",
  step: "int4",
  duration: "float8",
  tokens_in: "float8",
  tokens_out: "float8",
  cached_tokens: "float8",
  reasoning_tokens: "float8",
  cost: "float8",
  cost_note: "text",
  custom_cost: "int2",
  metadata: "text",
  request_content_type: "text",
  response_content_type: "text",
  request_size: "float8",
  response_size: "float8",
  authenticated: "int2",
  event_id: "text",
  request_body: "bytea",
  response_body: "bytea",
};

/**
 * One statement inserts a whole chunk of logs, in order (seq follows the batch), whatever its size: each column is
 * one array parameter, unnested together.
 */
const INSERT = `INSERT INTO ai_gateway.logs (${INSERT_COLUMNS.join(", ")})
  SELECT ${INSERT_COLUMNS.join(", ")} FROM unnest(${INSERT_COLUMNS.map((c, i) => `$${i + 1}::${INSERT_TYPES[c]}[]`).join(", ")})
    WITH ORDINALITY AS u(${INSERT_COLUMNS.join(", ")}, ord) ORDER BY ord`;
/** Logs per insert statement, and body bytes (sent as hex, so twice this on the wire). */
const CHUNK_LOGS = 1000;
const CHUNK_BODY_BYTES = 8 * 1024 * 1024;

const SELECT = `SELECT ${LOG_COLUMNS} FROM ai_gateway.logs`;
type StatsRow = Omit<LogStats, "total_count"> & { total_count: string };

const keyOf = (accountId: string, gatewayId: string) => `${accountId}/${gatewayId}`;
const bodyBytes = (l: NewLog) => (l.request_body?.length ?? 0) + (l.response_body?.length ?? 0);

/** The chunks a batch is inserted in: at most CHUNK_LOGS logs and (but for one big log) CHUNK_BODY_BYTES of bodies each. */
function chunks(logs: readonly NewLog[]): NewLog[][] {
  const out: NewLog[][] = [];
  let current: NewLog[] = [];
  let bytes = 0;
  for (const l of logs) {
    if (current.length && (current.length >= CHUNK_LOGS || bytes + bodyBytes(l) > CHUNK_BODY_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(l);
    bytes += bodyBytes(l);
  }
  if (current.length) out.push(current);
  return out;
}

/** The insert's parameters: one array per column. */
function columnArrays(logs: readonly NewLog[]): unknown[][] {
  const columns: unknown[][] = INSERT_COLUMNS.map(() => new Array<unknown>(logs.length));
  logs.forEach((l, row) => rowValues(l).forEach((v, col) => (columns[col][row] = v)));
  return columns;
}

/**
 * Logs in `ai_gateway.logs`, shared by every node. Writes come in batches (logs/queue.ts): one transaction per
 * batch, a few statements whatever its size. `ai_gateway.log_counts` holds each gateway's count, kept exact in the
 * transactions that add or remove logs; a batch locks the count rows of its gateways first, so the batches of two
 * nodes for one gateway take turns and a log limit holds across nodes.
 */
export class PgLogStore implements LogStore {
  /** `prices`: what the logs built from drafts (appendDrafts) are priced with. */
  constructor(
    private readonly pg: Postgres,
    private readonly prices: PriceTable,
    private readonly bus?: Bus,
  ) {}

  /**
   * Locks the count rows of these gateways (sorted: two batches never wait on each other in a circle) and returns
   * their counts; a gateway without a row gets one, counted from its logs (a database filled by a copy).
   */
  private async lockCounts(tx: Transaction, keys: readonly { accountId: string; gatewayId: string }[]): Promise<Map<string, number>> {
    const accounts = keys.map((k) => k.accountId);
    const gateways = keys.map((k) => k.gatewayId);
    const read = async () =>
      tx.rows<{ account_id: string; gateway_id: string; count: string }>(
        `SELECT c.account_id, c.gateway_id, c.count FROM ai_gateway.log_counts c
           JOIN unnest($1::text[], $2::text[]) AS k(a, g) ON c.account_id = k.a AND c.gateway_id = k.g
           ORDER BY c.account_id, c.gateway_id FOR UPDATE OF c`,
        [accounts, gateways],
      );
    let rows = await read();
    if (rows.length < keys.length) {
      await tx.execute(
        `INSERT INTO ai_gateway.log_counts (account_id, gateway_id, count)
           SELECT k.a, k.g, (SELECT count(*) FROM ai_gateway.logs l WHERE l.account_id = k.a AND l.gateway_id = k.g)
           FROM unnest($1::text[], $2::text[]) AS k(a, g) ORDER BY k.a, k.g
           ON CONFLICT DO NOTHING`,
        [accounts, gateways],
      );
      rows = await read();
    }
    return new Map(rows.map((r) => [keyOf(r.account_id, r.gateway_id), Number(r.count)]));
  }

  async append(batch: readonly NewLog[]): Promise<LogCount[]> {
    if (!batch.length) return [];
    const keys = new Map<string, { accountId: string; gatewayId: string }>();
    for (const l of batch) keys.set(keyOf(l.account_id, l.gateway_id), { accountId: l.account_id, gatewayId: l.gateway_id });
    const sorted = [...keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
    return this.pg.withTransaction(async (tx) => {
      const counts = await this.lockCounts(tx, sorted);
      // Each log in order, against its own limit, as the SQLite store writes them one by one: a STOP_INSERTING log past
      // its limit is dropped; a DELETE_OLDEST one makes room by trimming the gateway's oldest (after the inserts:
      // trimming is first in, first out, so trimming once at the end removes the same logs).
      const written: NewLog[] = [];
      const trims = new Map<string, number>();
      const limited = new Map<string, { accountId: string; gatewayId: string }>();
      for (const l of batch) {
        const key = keyOf(l.account_id, l.gateway_id);
        let n = counts.get(key)!;
        if (l.limit !== null) {
          limited.set(key, keys.get(key)!);
          if (l.strategy !== "DELETE_OLDEST" && n >= l.limit) continue;
        }
        written.push(l);
        n++;
        if (l.limit !== null && n > l.limit) {
          trims.set(key, (trims.get(key) ?? 0) + n - l.limit);
          n = l.limit;
        }
        counts.set(key, n);
      }
      for (const chunk of chunks(written)) await tx.execute(INSERT, columnArrays(chunk));
      for (const [key, n] of trims) {
        const { accountId, gatewayId } = keys.get(key)!;
        const trimmed = await tx.execute(
          `DELETE FROM ai_gateway.logs WHERE seq IN
             (SELECT seq FROM ai_gateway.logs WHERE account_id = $1 AND gateway_id = $2 ORDER BY seq LIMIT $3)`,
          [accountId, gatewayId, n],
        );
        // Fewer when a delete elsewhere took some of them first (it then lowers the count itself).
        counts.set(key, counts.get(key)! + n - trimmed);
      }
      await tx.execute(
        `UPDATE ai_gateway.log_counts AS c SET count = k.n FROM unnest($1::text[], $2::text[], $3::int8[]) AS k(a, g, n)
           WHERE c.account_id = k.a AND c.gateway_id = k.g`,
        [sorted.map((k) => k.accountId), sorted.map((k) => k.gatewayId), sorted.map((k) => counts.get(keyOf(k.accountId, k.gatewayId)))],
      );
      return [...limited].map(([key, k]) => ({ account_id: k.accountId, gateway_id: k.gatewayId, count: counts.get(key)! }));
    });
  }

  /** Built here, on the event loop, but off the request path: the queue's batch write. */
  appendDrafts(batch: readonly LogDraft[]): Promise<LogCount[]> {
    return this.append(buildLogs(batch, this.prices));
  }

  async count(accountId: string, gatewayId: string): Promise<number> {
    const row = await this.pg.row<{ n: string }>(
      `SELECT coalesce((SELECT count FROM ai_gateway.log_counts WHERE account_id = $1 AND gateway_id = $2),
                       (SELECT count(*) FROM ai_gateway.logs WHERE account_id = $1 AND gateway_id = $2)) AS n`,
      [accountId, gatewayId],
    );
    return Number(row!.n);
  }

  async list(accountId: string, gatewayId: string, query: LogQuery): Promise<{ logs: LogRecord[]; stats: LogStats }> {
    const where = pgLogWhere(accountId, gatewayId, query.filter);
    const n = where.args.length;
    const [rows, stats] = await Promise.all([
      this.pg.rows<LogRow>(`${SELECT} WHERE ${where.sql} ORDER BY ${pgLogOrderBy(query.order)} LIMIT $${n + 1} OFFSET $${n + 2}`, [
        ...where.args,
        query.limit ?? null,
        query.offset ?? 0,
      ]),
      this.pg.row<StatsRow>(`SELECT ${STATS_COLUMNS} FROM ai_gateway.logs WHERE ${where.sql}`, where.args),
    ]);
    return { logs: rows.map(toRecord), stats: { ...stats!, total_count: Number(stats!.total_count) } };
  }

  async get(accountId: string, gatewayId: string, logId: string): Promise<LogRecord | undefined> {
    const row = await this.pg.row<LogRow>(`${SELECT} WHERE account_id = $1 AND gateway_id = $2 AND id = $3`, [accountId, gatewayId, logId]);
    return row && toRecord(row);
  }

  async body(accountId: string, gatewayId: string, logId: string, which: "request" | "response") {
    return this.pg.row<{ body: Buffer | null; contentType: string | null }>(
      `SELECT ${BODY_COLUMNS[which]} FROM ai_gateway.logs WHERE account_id = $1 AND gateway_id = $2 AND id = $3`,
      [accountId, gatewayId, logId],
    );
  }

  async patch(accountId: string, gatewayId: string, logId: string, patch: LogPatch): Promise<boolean> {
    const sets: string[] = [];
    const args: unknown[] = [accountId, gatewayId, logId];
    const set = (column: string, value: unknown) => {
      args.push(value);
      sets.push(`${column} = $${args.length}`);
    };
    if (patch.feedback !== undefined) set("feedback", patch.feedback);
    if (patch.score !== undefined) set("score", patch.score);
    if (patch.metadata !== undefined) set("metadata", patch.metadata === null ? null : JSON.stringify(patch.metadata));
    const where = "account_id = $1 AND gateway_id = $2 AND id = $3";
    if (!sets.length) return (await this.pg.row(`SELECT 1 FROM ai_gateway.logs WHERE ${where}`, args)) !== undefined;
    return (await this.pg.execute(`UPDATE ai_gateway.logs SET ${sets.join(", ")} WHERE ${where}`, args)) > 0;
  }

  async delete(accountId: string, gatewayId: string, query: LogQuery): Promise<number> {
    const where = pgLogWhere(accountId, gatewayId, query.filter);
    return this.pg.withTransaction(async (tx) => {
      // The count row first, as a batch takes it: a batch and a delete of one gateway never wait on each other in a circle.
      await tx.execute("SELECT 1 FROM ai_gateway.log_counts WHERE account_id = $1 AND gateway_id = $2 FOR UPDATE", [accountId, gatewayId]);
      const deleted = await tx.execute(
        `DELETE FROM ai_gateway.logs WHERE seq IN
           (SELECT seq FROM ai_gateway.logs WHERE ${where.sql} ORDER BY ${pgLogOrderBy(query.order)} LIMIT $${where.args.length + 1})`,
        [...where.args, query.limit ?? null],
      );
      await tx.execute("UPDATE ai_gateway.log_counts SET count = count - $3 WHERE account_id = $1 AND gateway_id = $2", [accountId, gatewayId, deleted]);
      // Other nodes may hold a count that says the gateway is full.
      await this.bus?.publish(AIG_BUS_AREA, writeNotice({ kind: "logs", accountId, gatewayId }), tx);
      return deleted;
    });
  }

  /** Deletes every log of a gateway and its count (inside the gateway store's transaction that deletes the gateway). */
  async deleteAllOf(tx: Transaction, accountId: string, gatewayId: string): Promise<void> {
    await tx.execute("DELETE FROM ai_gateway.logs WHERE account_id = $1 AND gateway_id = $2", [accountId, gatewayId]);
    await tx.execute("DELETE FROM ai_gateway.log_counts WHERE account_id = $1 AND gateway_id = $2", [accountId, gatewayId]);
  }
}
