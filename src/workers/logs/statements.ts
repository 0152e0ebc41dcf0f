import { FIELDS, MAX_ANSWER_EVENTS, type Dialect, type EventQuery, type KeysQuery, type Sql, type ValuesQuery } from "./query.js";
import { EVENT_COLUMNS, SCAN_ROWS } from "./rows.js";
import type { KeyInfo } from "./store.js";

/**
 * The read queries both backends run, written once with `?` placeholders (the PostgreSQL store numbers them) on the
 * table `events` (`t`: its name, qualified on PostgreSQL). Every one is bounded to one account and one timeframe.
 */
export function readStatements(t: string, d: Dialect) {
  const scope = (accountId: string, q: KeysQuery): Sql => {
    const w = q.where(d);
    return { text: `account_id = ? AND ts >= ? AND ts <= ? AND ${w.text}`, params: [accountId, q.from, q.to, ...w.params] };
  };
  const after = (accountId: string, q: EventQuery): Sql =>
    q.after === undefined
      ? { text: "", params: [] }
      : {
          text: ` AND (ts < (SELECT ts FROM ${t} WHERE seq = ? AND account_id = ?) OR (ts = (SELECT ts FROM ${t} WHERE seq = ? AND account_id = ?) AND seq < ?))`,
          params: [q.after, accountId, q.after, accountId, q.after],
        };
  return {
    /** The time of the account's row `offset` rows below the newest of [from, to]: where a read's slice ends. */
    sliceEdge(accountId: string, from: number, to: number, offset: number): Sql {
      return {
        text: `SELECT ts FROM ${t} WHERE account_id = ? AND ts >= ? AND ts <= ? ORDER BY ts DESC LIMIT 1 OFFSET ?`,
        params: [accountId, from, to, offset],
      };
    },
    events(accountId: string, q: EventQuery): Sql {
      const s = scope(accountId, q);
      const a = after(accountId, q);
      return {
        text: `SELECT ${EVENT_COLUMNS} FROM ${t} WHERE ${s.text}${a.text} ORDER BY ts DESC, seq DESC LIMIT ?`,
        params: [...s.params, ...a.params, q.limit],
      };
    },
    count(accountId: string, q: EventQuery): Sql {
      const s = scope(accountId, q);
      return { text: `SELECT count(*) AS n FROM (SELECT 1 FROM ${t} WHERE ${s.text} LIMIT ?) AS matched`, params: [...s.params, SCAN_ROWS] };
    },
    /** The request ids of the newest `limit` invocations with an event matching. */
    invocationIds(accountId: string, q: EventQuery): Sql {
      const s = scope(accountId, q);
      return {
        text: `SELECT request_id, max(ts) AS last FROM ${t} WHERE ${s.text} GROUP BY request_id ORDER BY last DESC LIMIT ?`,
        params: [...s.params, q.limit],
      };
    },
    /**
     * The events of these invocations, oldest first: the newest MAX_ANSWER_EVENTS of them, so an answer holds no more
     * events than the events view's (a Worker logs up to 256 lines an invocation: 2,000 invocations would be 500,000).
     */
    invocationEvents(accountId: string, ids: readonly string[]): Sql {
      return {
        text: `SELECT ${EVENT_COLUMNS} FROM (SELECT ${EVENT_COLUMNS} FROM ${t} WHERE account_id = ? AND request_id IN (${ids.map(() => "?").join(", ")}) ORDER BY ts DESC, seq DESC LIMIT ?) AS newest ORDER BY ts, seq`,
        params: [accountId, ...ids, MAX_ANSWER_EVENTS],
      };
    },
    /** For each column a field is kept in, the newest time it had a value (over the newest SCAN_ROWS events matching). */
    keys(accountId: string, q: KeysQuery): { sql: Sql; columns: string[] } {
      const s = scope(accountId, q);
      const columns = [...new Set([...FIELDS.values()].map((f) => f.column))];
      const picks = columns.map((c, i) => `max(CASE WHEN ${c} IS NOT NULL THEN ts END) AS k${i}`).join(", ");
      return {
        columns,
        sql: { text: `SELECT ${picks} FROM (SELECT * FROM ${t} WHERE ${s.text} ORDER BY ts DESC LIMIT ?) AS recent`, params: [...s.params, SCAN_ROWS] },
      };
    },
    values(accountId: string, q: ValuesQuery): Sql {
      const s = scope(accountId, q);
      // q.column comes from FIELDS, never from the request.
      return {
        text: `SELECT DISTINCT ${q.column} AS v FROM (SELECT ${q.column} FROM ${t} WHERE ${s.text} AND ${q.column} IS NOT NULL ORDER BY ts DESC LIMIT ?) AS recent LIMIT ?`,
        params: [...s.params, SCAN_ROWS, q.limit],
      };
    },
  };
}

/** The fields whose column had a value, with when it last had one (both backends). */
export function keysOf(columns: readonly string[], row: Record<string, number | string | null> | undefined): KeyInfo[] {
  const seen = new Map(columns.map((c, i) => [c, row?.[`k${i}`]] as const));
  const out: KeyInfo[] = [];
  for (const [key, f] of FIELDS) {
    const last = seen.get(f.column);
    if (last !== null && last !== undefined) out.push({ key, type: f.type, lastSeenAt: Number(last) });
  }
  return out;
}
